"""Cluster tier: a running sharded cluster (config servers, two shards, mongos) rolled onto TLS
step by step: every component (each replica set's members by the operator's rolling restart,
the mongos routers by their Deployment) runs a mode before any starts the next one.

Real: the apiserver (the spec change, status.tls, Events), controller-manager (the StatefulSets'
pods replaced, the mongos Deployment's rollout), the operator process and its pymongo
administration of every set and of mongos. What stands in for mongod and mongos: the wire model,
each member and router answering as the --tlsMode its pod was started with (read once per pod
start). No BenchmarkRun here: that runs survive a roll is the replica-set test's
(test_tls_roll.py) and the unit tier's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trustme
from kubernetes import client as k8s
from test_tls_roll import _files, dial, model

from localplane.mongomodel import MongoModel
from localplane.objects import GROUP, VERSION, apply, ca_secret, get
from localplane.operator import start_operator, wait_until
from localplane.plane import Plane

pytestmark = pytest.mark.cluster
__all__ = ["model"]  # the fixture, shared with test_tls_roll

CA_SECRET = "sharded-roll-ca"
MODES = ("disabled", "allowTLS", "preferTLS", "requireTLS")
SETS = ("sr-cfg", "sr-shard0", "sr-shard1")


def manifest(tls: dict[str, Any] | None) -> dict[str, Any]:
    topology = {
        "type": "Sharded",
        "sharded": {"shards": 2, "membersPerShard": 1, "configServers": 1, "mongos": 1},
    }
    spec: dict[str, Any] = {"version": "7.0.14", "topology": topology}
    if tls is not None:
        spec["tls"] = tls
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MongoCluster",
        "metadata": {"name": "sr"},
        "spec": spec,
    }


def pod_mode(pod: Any) -> str:
    for container in pod.spec.containers:
        if container.name in ("mongod", "mongos"):
            args = list(container.args or [])
            return str(args[args.index("--tlsMode") + 1]) if "--tlsMode" in args else "disabled"
    raise AssertionError(f"pod {pod.metadata.name} runs neither mongod nor mongos")


@pytest.mark.timeout(300)
def test_a_sharded_cluster_rolls_onto_tls_one_mode_at_a_time_across_every_component(
    plane: Plane, namespace: str, kube_api: k8s.ApiClient, model: MongoModel, tmp_path: Path
) -> None:
    ca = trustme.CA(organization_name="mongobench sharded roll CA")
    members = [f"{rs}-0.{rs}-hl.{namespace}.svc.cluster.local:27017" for rs in SETS]
    router = f"sr-mongos.{namespace}.svc.cluster.local:27017"
    for host in members:
        model.member(host)
    model.mongos(router)
    apply(plane, namespace, ca_secret(CA_SECRET, ca))
    host_map = ",".join(f"{k}={v}" for k, v in model.host_map.items())
    operator = start_operator(
        plane.kubeconfig, [namespace], tmp_path / "operator.log", MONGOBENCH_HOST_MAP=host_map
    )
    core = k8s.CoreV1Api(kube_api)
    # (component -> the modes its pods run, status.tls.mode, cluster phase), when it changed
    samples: list[tuple[dict[str, frozenset[str]], str | None, str | None]] = []
    unsteady: list[dict[str, Any]] = []  # status when neither Ready nor Degraded

    def sample() -> dict[str, Any]:
        status = get(kube_api, namespace, "mongoclusters", "sr").get("status") or {}
        pods = core.list_namespaced_pod(namespace, label_selector="mongobench.io/cluster=sr")
        running: dict[str, set[str]] = {}
        for pod in pods.items:
            if pod.metadata.deletion_timestamp is None:
                component = pod.metadata.name.rsplit("-", 1)[0]
                component = "sr-mongos" if component.startswith("sr-mongos") else component
                running.setdefault(component, set()).add(pod_mode(pod))
        now = (
            {k: frozenset(v) for k, v in running.items()},
            (status.get("tls") or {}).get("mode"),
            status.get("phase"),
        )
        if not samples or samples[-1] != now:
            samples.append(now)
        if status.get("phase") not in ("Ready", "Degraded", None):
            unsteady.append(status)
        return status

    try:
        apply(plane, namespace, manifest(None))
        wait_until(lambda: sample().get("phase") == "Ready", timeout=120, what="sr Ready")
        plain_before = [dial(model.host_map[h]) for h in (*members, router)]
        samples.clear()
        apply(plane, namespace, manifest({"enabled": True, "caSecretName": CA_SECRET}))
        status = wait_until(
            lambda: (
                (s := sample()).get("tls", {}).get("phase") == "Completed"
                and s.get("phase") == "Ready"
                and s
            ),
            timeout=240,
            interval=0.2,
            what="the sharded roll onto requireTLS Completed",
        )
        sample()
        _, _, authority = _files(ca, tmp_path)
        plain_after = [dial(model.host_map[h]) for h in (*members, router)]
        tls_after = [dial(model.host_map[h], tls=True, tlsCAFile=str(authority),
                          tlsAllowInvalidHostnames=True) for h in (*members, router)]  # fmt: skip
        events = [
            e for e in core.list_namespaced_event(namespace).items if e.involved_object.name == "sr"
        ]
    finally:
        operator.stop()

    # Every component took part: the config servers, both shards and the routers.
    assert set(samples[-1][0]) == {*SETS, "sr-mongos"}, samples[-1]
    assert all(modes == {"requireTLS"} for modes in samples[-1][0].values()), samples[-1]
    # One mode at a time across the whole cluster: no pod started the next mode while any pod
    # of any component still ran the one before the current (each step waited for all).
    for running, _, _ in samples:
        levels = {MODES.index(m) for modes in running.values() for m in modes}
        assert max(levels) - min(levels) <= 1, samples
    # Each mode was run by every component at some point (none skipped), in order.
    for mode in MODES[1:]:
        assert any(all(modes == {mode} for modes in r.values()) for r, _, _ in samples), samples
    recorded = [mode for _, mode, _ in samples if mode]
    assert list(dict.fromkeys(recorded)) == ["allowTLS", "preferTLS", "requireTLS"], samples
    assert {phase for _, _, phase in samples} <= {"Ready", "Degraded"}, unsteady[:2]
    assert status["tls"]["mode"] == "requireTLS"
    rolling = sorted((e for e in events if e.reason == "TLSModeRolling"),
                     key=lambda e: e.first_timestamp or e.event_time)  # fmt: skip
    said = [next(m for m in MODES[1:] if m in (e.message or "")) for e in rolling]
    assert said == ["allowTLS", "preferTLS", "requireTLS"], [e.message for e in rolling]
    assert [e.reason for e in events].count("TLSRolled") == 1
    # Plain accepted by every member and the router before; after, refused, TLS accepted.
    assert plain_before == [True] * 4
    assert plain_after == [False] * 4 and tls_after == [True] * 4
    assert set(model.tls_connections) == {*members, router}
