"""Cluster tier: the operator process against a real kube-apiserver (KWOK nodes).

Proves the skeleton a user relies on: it starts, answers its probe and /metrics, accepts valid
custom resources with a status (phase, observedGeneration, conditions) and Events, and writes
structured JSON logs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from localplane.operator import OperatorProcess, start_operator, wait_until
from localplane.plane import Plane
from localplane.tools import REPO

pytestmark = pytest.mark.cluster

SAMPLES = REPO / "manifests" / "samples"


@pytest.fixture
def operator(plane: Plane, namespace: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    proc = start_operator(plane.kubeconfig, [namespace], tmp_path / "operator.log")
    try:
        yield proc
    finally:
        proc.stop()


def get_cr(api: k8s.ApiClient, namespace: str, plural: str, name: str) -> dict[str, Any]:
    custom = k8s.CustomObjectsApi(api)
    return dict(
        custom.get_namespaced_custom_object("mongobench.io", "v1alpha1", namespace, plural, name)
    )


def test_operator_sets_status_and_events_on_minimal_resources(
    operator: OperatorProcess, namespace: str, kubectl: Any, kube_api: k8s.ApiClient
) -> None:
    for sample in ("mongocluster-minimal.yaml", "benchmarkrun-minimal.yaml"):
        kubectl("apply", "-n", namespace, "-f", str(SAMPLES / sample))

    for plural in ("mongoclusters", "benchmarkruns"):
        obj = wait_until(
            lambda p=plural: (
                (o := get_cr(kube_api, namespace, p, "minimal")).get("status", {}).get("phase")
                and o
            ),
            what=f"{plural}/minimal status",
        )
        status = obj["status"]
        # No MongoDB answers here: the cluster gets no further than its pods (KWOK) allow.
        assert status["phase"] in {"Pending", "Provisioning", "Initializing", "Failed"}
        assert status["observedGeneration"] == obj["metadata"]["generation"]
        assert status["conditions"][0]["status"] in ("False", "Unknown")
        assert status["conditions"][0]["lastTransitionTime"]

    events = wait_until(
        lambda: [
            e
            for e in k8s.CoreV1Api(kube_api).list_namespaced_event(namespace).items
            if e.reason in ("Accepted", "Provisioning")
        ],
        what="events",
    )
    assert {e.involved_object.kind for e in events} == {"MongoCluster"}
    # The operator posts its own Events: kubectl describe finds them by the object's kind, name
    # and uid, and names the operator as their source.
    described = kubectl("describe", "mongocluster", "minimal", "-n", namespace).stdout
    assert "Provisioning" in described and "mongobench-operator" in described
    # The run waits for its cluster, visibly.
    run = get_cr(kube_api, namespace, "benchmarkruns", "minimal")
    ready = {c["type"]: c for c in run["status"]["conditions"]}["ClusterReady"]
    assert run["status"]["phase"] == "Pending" and ready["status"] == "False"

    # The printer columns show what the operator wrote.
    table = kubectl("get", "mongoclusters", "-n", namespace).stdout
    assert "ReplicaSet" in table and "7.0.14" in table


def test_operator_probe_metrics_and_json_logs(
    operator: OperatorProcess, namespace: str, kubectl: Any, kube_api: k8s.ApiClient
) -> None:
    kubectl("apply", "-n", namespace, "-f", str(SAMPLES / "mongocluster-minimal.yaml"))
    wait_until(
        lambda: get_cr(kube_api, namespace, "mongoclusters", "minimal").get("status"),
        what="status",
    )
    assert operator.healthz()  # kopf's liveness endpoint answers with probe results
    metrics = wait_until(
        lambda: (
            'mongobench_reconciles_total{handler="provision",kind="MongoCluster",outcome="ok"}'
            in (m := operator.metrics())
            and m
        ),
        what="reconcile counter",
    )
    assert "mongobench_reconcile_duration_seconds_bucket" in metrics
    records = operator.log_records()
    assert records and all(not r.get("unstructured") for r in records)
    assert any(r.get("object", {}).get("kind") == "MongoCluster" for r in records)
