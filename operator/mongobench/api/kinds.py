"""The kinds of the operator's custom resources (group mongobench.io), named once here."""

MONGOCLUSTER = "MongoCluster"
BENCHMARKRUN = "BenchmarkRun"
BENCHMARKEXPERIMENT = "BenchmarkExperiment"
