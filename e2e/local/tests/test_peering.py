"""Cluster tier: two operator replicas under kopf's peering (issue 23), as the Helm chart and the
EKS overlay run them and as every rolling update overlaps them. Two real operator processes
share a KopfPeering on the real local plane, with a MongoCluster (its sync ticking every 2 s
while MongoDB, never reachable here, is awaited) and a BenchmarkRun waiting for it (woken by
the cluster's events), in both start orders:

- the replica of lower priority sends the apiserver nothing while it is paused but what kopf's
  peering itself needs (its keep-alives and its watch of the peering object, kopf's watches of
  CRDs and namespaces, API discovery): no read of a MongoCluster, a BenchmarkRun or a child,
  no write;
- when the active replica dies (SIGKILL: no goodbye), the other resumes once its keep-alive
  expires and ticks the cluster again within seconds, and handles a run it has not seen yet
  (one created while it was paused, or every run when it was paused from its start).

Each replica has a client certificate of its own, so the apiserver's audit log tells their
requests apart by user.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from kubernetes import client as k8s

from localplane.nodes import NodeSet
from localplane.operator import OperatorProcess, wait_until
from localplane.plane import Plane
from localplane.pytest_plugin import apply_repo_crds
from localplane.tools import REPO

pytestmark = pytest.mark.cluster

SAMPLES = REPO / "manifests" / "samples"
# Seconds a keep-alive holds: a replica killed without a goodbye blocks the other that long.
LIFETIME = 5
LOW, HIGH = 100, 200
LEARNED_RUN = json.dumps(
    {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {"name": "learned"},
        "spec": {"clusterRef": {"name": "minimal"}, "workloads": [{"name": "a"}]},
    }
)


@pytest.fixture(scope="module")
def audited_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    plane = Plane.start(
        tmp_path_factory.mktemp("peering-plane"), nodes=NodeSet(profile="kind", count=1), audit=True
    )
    try:
        apply_repo_crds(plane)  # crds/ holds kopf's peering CRDs too, as the chart installs them
        yield plane
    finally:
        plane.stop()


@dataclass
class Request:
    at: float  # seconds since the epoch, when the apiserver received it
    user: str
    verb: str
    group: str | None  # None: a request for no resource (API discovery)
    resource: str | None
    uri: str

    @property
    def peering_or_discovery(self) -> bool:
        """What a paused kopf still sends: its peering (keep-alive patches, the watch of the
        peering object), its observation of CRDs and namespaces, and API discovery."""
        return (
            self.resource is None
            or self.group == "kopf.dev"
            or self.resource == "customresourcedefinitions"
            or (self.resource == "namespaces" and self.verb in ("list", "watch"))
        )


def requests(plane: Plane, user: str, since: float, until: float | None = None) -> list[Request]:
    """The user's requests the apiserver received from `since` on (up to `until`)."""
    found = []
    for event in plane.audit_events():
        if event.get("user", {}).get("username") != user or event["stage"] == "ResponseStarted":
            continue  # a watch is logged when it starts and when it ends: counted once
        at = datetime.fromisoformat(event["requestReceivedTimestamp"]).timestamp()
        if at < since or (until is not None and at > until):
            continue
        ref = event.get("objectRef") or {}
        found.append(
            Request(
                at,
                user,
                event["verb"],
                (ref.get("apiGroup") or "") if ref else None,
                ref.get("resource"),
                event["requestURI"],
            )
        )
    return found


def run_reads(plane: Plane, user: str, since: float, run: str = "minimal") -> list[Request]:
    """The user's reads of a BenchmarkRun: each advance of the run reads it."""
    return reads(plane, user, since, "benchmarkruns", run)


def cluster_reads(plane: Plane, user: str, since: float) -> list[Request]:
    """The user's reads of the MongoCluster: each tick of its sync (every 2 s here) reads it."""
    return reads(plane, user, since, "mongoclusters", "minimal")


def reads(plane: Plane, user: str, since: float, resource: str, name: str) -> list[Request]:
    return [
        r
        for r in requests(plane, user, since)
        if r.resource == resource and r.verb == "get" and r.uri.split("?")[0].endswith(name)
    ]


def logged(operator: OperatorProcess, text: str) -> int:
    """How many of the operator's log messages contain `text`."""
    return sum(text in str(r.get("message", "")) for r in operator.log_records())


# Logged once the work that ran when the pause came has ended: every peered replica starts
# paused (until kopf has read the peering object), so each start logs it once too.
PAUSED = "paused by peering: the operator's own running work has ended"


def start(plane: Plane, namespace: str, user: str, priority: int, log: Path) -> OperatorProcess:
    return OperatorProcess(
        plane.user_kubeconfig(user),
        (namespace,),
        log,
        env={
            "MONGOBENCH_PEERING": "mongobench",
            "MONGOBENCH_PEERING_MANDATORY": "true",
            "MONGOBENCH_PRIORITY": str(priority),
            "MONGOBENCH_PEERING_LIFETIME": str(LIFETIME),
        },
    ).start()


def namespace_with_work(plane: Plane, name: str) -> str:
    """A namespace with its KopfPeering, a MongoCluster and a BenchmarkRun waiting for it."""
    core = k8s.CoreV1Api(plane.api_client())
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
    plane.kubectl(
        "apply",
        "-n",
        name,
        "-f",
        "-",
        input=json.dumps(
            {"apiVersion": "kopf.dev/v1", "kind": "KopfPeering", "metadata": {"name": "mongobench"}}
        ),
    )
    for sample in ("mongocluster-minimal.yaml", "benchmarkrun-minimal.yaml"):
        plane.kubectl("apply", "-n", name, "-f", str(SAMPLES / sample))
    return name


def assert_silent_while_paused(
    plane: Plane, user: str, since: float, until: float
) -> list[Request]:
    seen = requests(plane, user, since, until)
    unexpected = [(r.verb, r.uri) for r in seen if not r.peering_or_discovery]
    assert unexpected == [], f"{user} sent these while paused"
    keepalives = [r for r in seen if r.group == "kopf.dev" and r.verb == "patch"]
    assert keepalives, f"no keep-alive of {user} between {since} and {until}: not counted?"
    return seen


def report(order: str, seen: list[Request], paused_for: float, delay: float) -> None:
    kinds = Counter(f"{r.verb} {r.resource or r.uri}" for r in seen)
    print(
        f"\n{order}: the paused replica sent {len(seen)} requests in {paused_for:.1f} s, "
        f"all peering or discovery ({dict(kinds)}); it resumed {delay:.1f} s after the active "
        f"one died (keep-alive lifetime {LIFETIME} s)"
    )


def assert_resumes_after_the_active_one_dies(
    plane: Plane,
    active: OperatorProcess,
    standby: OperatorProcess,
    standby_user: str,
    runs: tuple[str, ...],
) -> float:
    """SIGKILL the active replica; the standby resumes and ticks the cluster again (its ticks
    were dropped with the pause: the replayed events bring them back), and handles the `runs`
    it has not seen yet. Its delay."""
    resumes = logged(standby, "resumed by peering")
    killed = time.time()
    active.kill()
    wait_until(
        lambda: len(cluster_reads(plane, standby_user, killed)) >= 3,
        timeout=LIFETIME + 20,
        what=f"{standby_user} ticking the cluster after the active replica died",
    )
    for run in runs:
        wait_until(
            lambda r=run: run_reads(plane, standby_user, killed, r),  # type: ignore[misc]
            timeout=LIFETIME + 20,
            what=f"{standby_user} handling the run {run} after the active replica died",
        )
    assert logged(standby, "resumed by peering") == resumes + 1
    return cluster_reads(plane, standby_user, killed)[0].at - killed


def test_a_replica_started_second_with_a_higher_priority_silences_the_first(
    audited_plane: Plane, tmp_path: Path
) -> None:
    plane = audited_plane
    namespace = namespace_with_work(plane, "peering-low-first")
    low = start(plane, namespace, "replica-low", LOW, tmp_path / "low.log")
    high: OperatorProcess | None = None
    try:
        began = time.time()
        wait_until(lambda: len(cluster_reads(plane, "replica-low", began)) >= 2, timeout=30)
        pauses = logged(low, PAUSED)
        high = start(plane, namespace, "replica-high", HIGH, tmp_path / "high.log")
        wait_until(
            lambda: logged(low, PAUSED) > pauses,
            timeout=30,
            what="the low-priority replica paused, its running work ended",
        )
        paused = time.time()
        # The high-priority replica ticks the cluster for a few seconds meanwhile.
        wait_until(lambda: len(cluster_reads(plane, "replica-high", paused)) >= 4, timeout=30)
        # A run created while the low-priority replica is paused: the active one starts it.
        plane.kubectl("apply", "-n", namespace, "-f", "-", input=LEARNED_RUN)
        wait_until(lambda: run_reads(plane, "replica-high", paused, "learned"), timeout=30)
        checked = time.time()
        seen = assert_silent_while_paused(plane, "replica-low", paused, checked)
        # The run it saw before the pause waits for the cluster: nothing wakes it; the one
        # created meanwhile is new to it.
        delay = assert_resumes_after_the_active_one_dies(
            plane, high, low, "replica-low", runs=("learned",)
        )
        report("low first", seen, checked - paused, delay)
    finally:
        low.stop()
        if high is not None:
            high.stop()


def test_a_replica_started_second_with_a_lower_priority_stays_silent(
    audited_plane: Plane, tmp_path: Path
) -> None:
    plane = audited_plane
    namespace = namespace_with_work(plane, "peering-high-first")
    high = start(plane, namespace, "replica-high", HIGH, tmp_path / "high.log")
    low: OperatorProcess | None = None
    try:
        began = time.time()
        wait_until(lambda: len(cluster_reads(plane, "replica-high", began)) >= 2, timeout=30)
        started = time.time()
        low = start(plane, namespace, "replica-low", LOW, tmp_path / "low.log")
        wait_until(
            lambda: logged(low, PAUSED),
            timeout=30,
            what="the low-priority replica paused from its start",
        )
        checkpoint = time.time()
        wait_until(lambda: len(cluster_reads(plane, "replica-high", checkpoint)) >= 4, timeout=30)
        # From its very start: kopf pauses a replica before its first watch of a resource.
        checked = time.time()
        seen = assert_silent_while_paused(plane, "replica-low", started, checked)
        # Paused from its start, it has seen no run yet.
        delay = assert_resumes_after_the_active_one_dies(
            plane, high, low, "replica-low", runs=("minimal",)
        )
        report("high first", seen, checked - started, delay)
    finally:
        high.stop()
        if low is not None:
            low.stop()
