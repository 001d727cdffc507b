"""Unit tier, property-based (hypothesis): for any spec of the CRDs' schema, the operator's
models and builders either produce objects whose names Kubernetes accepts, or refuse with a
SpecError that names the field; nothing else (no other exception, no invalid child).

Samples follow the OpenAPI schema only (localplane.specgen); CEL rules are the apiserver's, so
some samples are ones admission would refuse: the operator must still refuse them cleanly (an
object stored before a rule existed reaches it the same way). The cluster tier checks the
admitted samples' objects with a server-side dry run (e2e/local/tests/test_spec_dry_run.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from localplane.specgen import name_problems, names, specs
from mongobench.api import BenchmarkRunSpec, MongoClusterSpec, SpecError
from mongobench.api.names import check_benchmarkrun_name
from mongobench.benchmarkrun.build.jobs import RunRef, barrier_name, build_client_rbac, build_job
from mongobench.benchmarkrun.decide.plan import make_plan
from mongobench.mongocluster.build.generate import GeneratedSecrets
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench.mongocluster.build.objects import build_workload_objects
from mongobench.mongocluster.build.platform import PRESETS
from mongobench.mongocluster.build.secrets import build_secrets

pytestmark = pytest.mark.unit

PROPERTY = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,  # the same samples on every run: a failure is reproducible
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
SECRETS = GeneratedSecrets("k" * 44, "a", "b/+", "c", "d")


def names_a_field(error: SpecError) -> bool:
    return str(error).startswith(("spec.", "spec:", "metadata.name"))


def mongocluster_objects(name: str, spec: dict[str, Any], platform: str) -> list[dict[str, Any]]:
    parsed = MongoClusterSpec.parse(spec)
    layout = cluster_layout(name, "ns", parsed)
    return build_secrets(parsed, layout, SECRETS) + build_workload_objects(
        parsed, layout, PRESETS[platform]
    )


def benchmarkrun_objects(name: str, spec: dict[str, Any]) -> list[dict[str, Any]]:
    check_benchmarkrun_name(name)
    parsed = BenchmarkRunSpec.parse(spec)
    run = RunRef(name, "ns", "uid", "c-connection", "uri", "c", "image")
    steps = make_plan(parsed)
    objects = [build_job(parsed, s, run) for s in steps if s.runs_job]
    objects += build_client_rbac(run, steps)
    objects += [{"kind": "ConfigMap", "metadata": {"name": barrier_name(run, s)}} for s in steps]
    return objects


@PROPERTY
@given(
    name=names("MongoCluster"),
    spec=specs("MongoCluster"),
    platform=st.sampled_from(sorted(PRESETS)),
)
def test_any_mongocluster_spec_builds_valid_objects_or_is_refused_naming_the_field(
    name: str, spec: dict[str, Any], platform: str
) -> None:
    try:
        objects = mongocluster_objects(name, spec, platform)
    except SpecError as exc:
        assert names_a_field(exc), str(exc)
        return
    assert [p for o in objects for p in name_problems(o)] == []


@PROPERTY
@given(name=names("BenchmarkRun"), spec=specs("BenchmarkRun"))
def test_any_benchmarkrun_spec_builds_valid_objects_or_is_refused_naming_the_field(
    name: str, spec: dict[str, Any]
) -> None:
    try:
        objects = benchmarkrun_objects(name, spec)
    except SpecError as exc:
        assert names_a_field(exc), str(exc)
        return
    assert [p for o in objects for p in name_problems(o)] == []
