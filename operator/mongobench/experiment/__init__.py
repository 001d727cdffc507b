"""BenchmarkExperiment: a matrix of cluster variants x run variants x repetitions (pure parts in
matrix.py and schedule.py, when it looks again in requeue.py; the I/O in reconcile.py)."""
