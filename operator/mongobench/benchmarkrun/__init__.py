"""BenchmarkRun: plan, Jobs, results, CPU and the orchestration that ties them together."""
