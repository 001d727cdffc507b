"""Typed models of the custom resources' specs, parsed from what the apiserver stored.

The CRDs in crds/ are the one source of truth for the schema (defaults, enums, bounds, CEL rules
are enforced at admission); these models only give the operator typed access. A unit test walks
both and fails when they disagree on a field, a type or a default.
"""

from mongobench.api.benchmarkexperiment import BenchmarkExperimentSpec, HistorySpec
from mongobench.api.benchmarkrun import BenchmarkRunSpec
from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.api.schema import SpecError

GROUP = "mongobench.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

__all__ = [
    "API_VERSION",
    "GROUP",
    "VERSION",
    "BenchmarkExperimentSpec",
    "BenchmarkRunSpec",
    "HistorySpec",
    "MongoClusterSpec",
    "SpecError",
]
