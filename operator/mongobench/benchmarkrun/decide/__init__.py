"""Pure decisions: what a BenchmarkRun does next, from what was observed (the time passed in)."""
