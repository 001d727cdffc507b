"""I/O: a BenchmarkRun's calls to the Kubernetes API, MongoDB and its archive, carrying out what
decide/ says with what build/ makes."""
