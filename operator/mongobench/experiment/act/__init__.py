"""I/O: one reconcile of an experiment (the API), its summary archived, its history read."""
