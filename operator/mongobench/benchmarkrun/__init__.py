"""BenchmarkRun: plan, Jobs, results, CPU and the orchestration that ties them together (observe
in orchestrate.py, decide in the pure decide.py; when the run looks again in the pure
requeue.py)."""
