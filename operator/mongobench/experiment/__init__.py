"""BenchmarkExperiment: a matrix of cluster variants x run variants x repetitions (pure parts in
matrix.py and schedule.py; the I/O in the handler)."""
