"""Pure: the objects an experiment creates (its cells' MongoClusters and BenchmarkRuns)."""
