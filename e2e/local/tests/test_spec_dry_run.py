"""Cluster tier, property-based (hypothesis): what the CRDs admit, the operator can build, and
what they refuse, they refuse naming the field. Proven against a real kube-apiserver (v1.32)
with server-side dry runs: nothing is stored.

- A generated spec (localplane.specgen: the schema's types, enums, bounds and patterns; the
  CEL rules met or not by chance) is created with dryRun=All. If admitted, every object the
  operator's builders make from the stored (defaulted) spec is created with dryRun=All too, and
  must be accepted: Secrets, Services, StatefulSets, the mongos Deployment, PodDisruptionBudgets
  and the PodMonitor of a MongoCluster; every step's Job, the start barriers and the client
  ServiceAccount, Role and RoleBinding of a BenchmarkRun. If refused, the error names a field.
- A sample with one field broken against its schema is refused, naming that field.

The samples are derandomized (the same on every run), so a failure reproduces.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from localplane.plane import Plane
from localplane.specgen import Corruption, corrupted, names, specs
from mongobench.api import BenchmarkRunSpec, MongoClusterSpec
from mongobench.benchmarkrun.build.jobs import RunRef, barrier_name, build_client_rbac, build_job
from mongobench.benchmarkrun.decide.plan import make_plan
from mongobench.k8s import client as kube
from mongobench.k8s.api import KubeClient
from mongobench.k8s.credentials import from_kubeconfig
from mongobench.mongocluster.build.generate import GeneratedSecrets
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench.mongocluster.build.objects import build_workload_objects
from mongobench.mongocluster.build.platform import PRESETS
from mongobench.mongocluster.build.secrets import build_secrets

pytestmark = pytest.mark.cluster

DRY_RUN = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    # One namespace for all samples is right here: dry runs store nothing.
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
SECRETS = GeneratedSecrets("k" * 44, "a", "b", "c", "d")
PLURALS = {"MongoCluster": "mongoclusters", "BenchmarkRun": "benchmarkruns"}


@pytest.fixture
def operator_api(bare_plane: Plane) -> Iterator[kube.ApiClient]:
    """The operator's own client, from the plane's kubeconfig (client certificate, CA data)."""
    api = kube.ApiClient(from_kubeconfig([bare_plane.kubeconfig]))
    try:
        yield api
    finally:
        api.close()


def dry_run(api: kube.ApiClient, obj: dict[str, Any]) -> dict[str, Any]:
    """Create `obj` with dryRun=All (strict fields, as the operator's KubeApi does); the object
    as the apiserver would store it."""
    return KubeClient(api).create(obj, dry_run=True)


def admitted(
    api: kube.ApiClient, namespace: str, kind: str, name: str, spec: dict[str, Any]
) -> dict[str, Any] | None:
    """The custom resource as stored, or None when admission refused it naming a field."""
    obj = {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    try:
        stored = dry_run(api, obj)
    except kube.ApiError as exc:
        assert exc.status == 422, exc.body
        assert "spec." in exc.body or "metadata.name" in exc.body, exc.body
        event(f"{kind} refused at admission")  # --hypothesis-show-statistics
        return None
    event(f"{kind} admitted")
    return stored


def refused(api: kube.ApiClient, obj: dict[str, Any]) -> list[str]:
    """`obj` and the apiserver's message for each object it refuses (none expected)."""
    try:
        dry_run(api, obj)
    except kube.ApiError as exc:
        return [f"{obj['kind']} {obj['metadata']['name']}: {exc.status} {exc.body}"]
    return []


@DRY_RUN
@given(
    name=names("MongoCluster"),
    spec=specs("MongoCluster"),
    platform=st.sampled_from(sorted(PRESETS)),
)
def test_an_admitted_mongocluster_builds_objects_the_apiserver_accepts(
    plane: Plane,
    prometheus_operator_crds: list[str],
    namespace: str,
    operator_api: kube.ApiClient,
    name: str,
    spec: dict[str, Any],
    platform: str,
) -> None:
    stored = admitted(operator_api, namespace, "MongoCluster", name, spec)
    if stored is None:
        return
    parsed = MongoClusterSpec.parse(stored["spec"])
    layout = cluster_layout(name, namespace, parsed)
    objects = build_secrets(parsed, layout, SECRETS)
    objects += build_workload_objects(parsed, layout, PRESETS[platform])
    assert [r for obj in objects for r in refused(operator_api, obj)] == []


@DRY_RUN
@given(name=names("BenchmarkRun"), spec=specs("BenchmarkRun"))
def test_an_admitted_benchmarkrun_builds_objects_the_apiserver_accepts(
    plane: Plane, namespace: str, operator_api: kube.ApiClient, name: str, spec: dict[str, Any]
) -> None:
    stored = admitted(operator_api, namespace, "BenchmarkRun", name, spec)
    if stored is None:
        return
    parsed = BenchmarkRunSpec.parse(stored["spec"])
    run = RunRef(name, namespace, "uid-1", "c-connection", "uri", "c", "mongobench/ycsb:test")
    steps = make_plan(parsed)
    objects = [build_job(parsed, s, run) for s in steps if s.runs_job]
    objects += build_client_rbac(run, steps)
    barrier = {"apiVersion": "v1", "kind": "ConfigMap"}
    objects += [
        {**barrier, "metadata": {"name": barrier_name(run, s), "namespace": namespace}}
        for s in steps
    ]
    for obj in objects:
        obj["metadata"].pop("ownerReferences", None)  # the owner is not stored in a dry run
    assert [r for obj in objects for r in refused(operator_api, obj)] == []


@DRY_RUN
@given(kind=st.sampled_from(sorted(PLURALS)), data=st.data())
def test_a_spec_broken_in_one_field_is_refused_naming_that_field(
    plane: Plane, namespace: str, operator_api: kube.ApiClient, kind: str, data: st.DataObject
) -> None:
    broken: Corruption = data.draw(corrupted(kind))
    obj = {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": "broken", "namespace": namespace},
        "spec": broken.spec,
    }
    with pytest.raises(kube.ApiError) as refusal:
        dry_run(operator_api, obj)
    assert refusal.value.status == 422
    assert broken.path in str(refusal.value.body), (broken.path, refusal.value.body)
