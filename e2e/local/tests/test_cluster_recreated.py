"""Cluster tier: a MongoCluster deleted and created again under the same name before garbage
collection removed the first one's children (an experiment's next round does this; CI once saw
the collector 45 s behind, retrying its REST mapping of the CRD). The new cluster takes none of
them over: it waits, saying for what, and once they are collected it runs on objects and
credentials of its own (mongocluster/decide/predecessor.py).

Real: the apiserver, the operator process, and kube-controller-manager, whose garbage collector
is held back by stopping the process (SIGSTOP) across the deletion and the new creation, then let
go. What stands in for mongod and mongos: the wire model, which forgets the deleted cluster's
replica sets with it (as its volumes would go).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from test_benchmarkexperiment import forget_cluster, register_sharded
from test_benchmarkrun import model

from localplane.mongomodel import MongoModel
from localplane.objects import GROUP, VERSION, apply, get
from localplane.operator import start_operator, wait_until
from localplane.plane import Plane

pytestmark = pytest.mark.cluster
__all__ = ["model"]  # the fixture, shared with test_benchmarkrun


def manifest() -> dict[str, Any]:
    topology = {"shards": 1, "membersPerShard": 1, "configServers": 1, "mongos": 1}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MongoCluster",
        "metadata": {"name": "rc"},
        # Delete: the Secrets, too, are left to the collector (Retain keeps them for the next
        # cluster of the name, with the claims their data is in).
        "spec": {
            "version": "7.0.14",
            "topology": {"type": "Sharded", "sharded": topology},
            "deletionPolicy": "Delete",
        },
    }


@contextmanager
def garbage_collection_held(plane: Plane) -> Iterator[None]:
    """kube-controller-manager stopped (its collector with it) for the block."""
    kcm = next(p for p in plane.procs if p.name == "kube-controller-manager")
    os.kill(kcm.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(kcm.pid, signal.SIGCONT)


@pytest.mark.timeout(300)
def test_a_cluster_created_again_waits_for_its_predecessors_objects_then_runs_on_its_own(
    plane: Plane, namespace: str, kube_api: k8s.ApiClient, model: MongoModel, tmp_path: Path
) -> None:
    register_sharded(model, namespace, "rc", 1)
    host_map = ",".join(f"{k}={v}" for k, v in model.host_map.items())
    operator = start_operator(
        plane.kubeconfig, [namespace], tmp_path / "operator.log", MONGOBENCH_HOST_MAP=host_map
    )
    custom, apps, core = (
        k8s.CustomObjectsApi(kube_api),
        k8s.AppsV1Api(kube_api),
        k8s.CoreV1Api(kube_api),
    )

    def cluster() -> dict[str, Any]:
        try:
            return get(kube_api, namespace, "mongoclusters", "rc")
        except k8s.ApiException:
            return {}

    def ready_message() -> str:
        conditions = (cluster().get("status") or {}).get("conditions") or []
        return next((c.get("message", "") for c in conditions if c["type"] == "Ready"), "")

    def workload_owners() -> dict[str, tuple[str, str]]:
        """name -> (uid, its controller's uid) of the cluster's StatefulSets and Deployment."""
        items = [*apps.list_namespaced_stateful_set(namespace).items,
                 *apps.list_namespaced_deployment(namespace).items]  # fmt: skip
        return {
            o.metadata.name: (o.metadata.uid, (o.metadata.owner_references or [None])[0].uid)
            for o in items
        }

    try:
        apply(plane, namespace, manifest())
        wait_until(lambda: cluster().get("status", {}).get("phase") == "Ready", timeout=120)
        first_uid = cluster()["metadata"]["uid"]
        first = workload_owners()
        first_password = core.read_namespaced_secret("rc-admin", namespace).data["password"]
        with garbage_collection_held(plane):
            custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, "mongoclusters", "rc")
            wait_until(lambda: not cluster(), timeout=60, what="rc deleted")
            forget_cluster(model, "rc")
            apply(plane, namespace, manifest())
            second_uid = cluster()["metadata"]["uid"]
            said = wait_until(
                lambda: "same name" in (m := ready_message()) and m, timeout=60, what="waiting"
            )
            held = workload_owners()
            phase_held = cluster()["status"]["phase"]
        # Let go: the collector deletes the first cluster's objects, the second creates its own.
        wait_until(lambda: cluster().get("status", {}).get("phase") == "Ready", timeout=180)
        second = workload_owners()
        second_password = core.read_namespaced_secret("rc-admin", namespace).data["password"]
    finally:
        operator.stop()

    assert second_uid != first_uid
    # While held: nothing adopted, the status names what it waits for.
    assert held == first, held
    assert phase_held == "Pending" and "rc-cfg" in said and "rc-mongos" in said, said
    # Then: every workload and credential is the new cluster's own.
    assert set(second) == set(first)
    assert all(second[n][0] != first[n][0] and second[n][1] == second_uid for n in second), second
    assert second_password != first_password
