"""Pure builders: a BenchmarkRun's spec in, Kubernetes objects, names and documents out."""
