"""Unit tier: the index of the latest MongoCluster bodies (runtime.bodies) that a BenchmarkRun reads
its cluster from instead of a GET: fed by the cluster's events, bounded, emptied on a peering
pause, and never answering for a cluster after its deletion; on a miss the GET goes out."""

from __future__ import annotations

from typing import Any

import pytest
from fake_kube import FakeKube

from mongobench.runtime.bodies import LatestBodies, WatchedReads
from mongobench.state import OperatorState

pytestmark = pytest.mark.unit

KIND = "MongoCluster"


def cluster(name: str, phase: str = "Ready", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": KIND,
        "metadata": {"namespace": "ns", "name": name, **meta},
        "spec": {"topology": {"replicaSet": {"members": 1}}},
        "status": {"phase": phase},
    }


def key(name: str) -> tuple[str, str, str]:
    return (KIND, "ns", name)


class CountingKube(FakeKube):
    """FakeKube that counts its GETs by kind."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        super().__init__(*objects)
        self.gets: dict[str, int] = {}

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        self.gets[kind] = self.gets.get(kind, 0) + 1
        return super().get(kind, namespace, name)


def test_the_latest_event_is_what_a_read_returns_without_a_get() -> None:
    kube = CountingKube(cluster("c", "Provisioning"))
    bodies = LatestBodies()
    reads = WatchedReads(kube, KIND, bodies)
    bodies.seen(key("c"), cluster("c", "Provisioning"))
    bodies.seen(key("c"), cluster("c", "Ready"))
    got = reads.get(KIND, "ns", "c")
    assert got is not None and got["status"]["phase"] == "Ready"
    assert kube.gets == {}
    reads.get("Job", "ns", "j")  # other kinds go to the apiserver
    assert kube.gets == {"Job": 1}


def test_a_read_is_a_copy_of_its_own() -> None:
    bodies = LatestBodies()
    bodies.seen(key("c"), cluster("c"))
    first = bodies.get(key("c"))
    assert first is not None
    first["status"]["phase"] = "Changed by a reader"
    again = bodies.get(key("c"))
    assert again is not None and again["status"]["phase"] == "Ready"


def test_a_cluster_never_seen_is_read_from_the_apiserver() -> None:
    kube = CountingKube(cluster("c"))
    reads = WatchedReads(kube, KIND, LatestBodies())
    got = reads.get(KIND, "ns", "c")
    assert got is not None and kube.gets == {KIND: 1}
    assert reads.get(KIND, "ns", "absent") is None


def test_a_deleted_or_deleting_cluster_is_never_answered_from_the_index() -> None:
    kube = CountingKube()  # the apiserver has it no more
    bodies = LatestBodies()
    reads = WatchedReads(kube, KIND, bodies)
    bodies.seen(key("c"), cluster("c"))
    bodies.gone(key("c"))  # its DELETED event
    assert reads.get(KIND, "ns", "c") is None and kube.gets == {KIND: 1}
    bodies.seen(key("d"), cluster("d"))
    bodies.seen(key("d"), cluster("d", deletionTimestamp="2026-11-26T00:00:00Z"))
    assert key("d") not in bodies  # its finalizers run: read from the apiserver
    assert reads.get(KIND, "ns", "d") is None and kube.gets == {KIND: 2}


def test_the_index_holds_at_most_its_limit_and_evicts_the_least_recently_fed() -> None:
    bodies = LatestBodies(limit=3)
    for name in ("a", "b", "c"):
        bodies.seen(key(name), cluster(name))
    bodies.seen(key("a"), cluster("a", "Degraded"))  # fed again: the most recent now
    bodies.seen(key("d"), cluster("d"))
    assert len(bodies) == 3
    assert key("b") not in bodies  # evicted: a miss, then a GET
    assert all(key(n) in bodies for n in ("a", "c", "d"))


def test_a_pause_empties_the_index_and_nothing_is_kept_until_it_resumes() -> None:
    bodies = LatestBodies()
    bodies.seen(key("c"), cluster("c"))
    bodies.pause()
    assert len(bodies) == 0
    bodies.seen(key("c"), cluster("c"))  # an event delivered as the pause began
    assert len(bodies) == 0
    bodies.resume()
    bodies.seen(key("c"), cluster("c"))
    assert key("c") in bodies


def test_the_operators_pause_empties_it_and_a_forgotten_cluster_leaves_it() -> None:
    state = OperatorState.create(api=object())  # type: ignore[arg-type]  # no request is sent
    try:
        state.clusters.seen(key("c"), cluster("c"))
        state.forget(KIND, "ns", "c")
        assert len(state.clusters) == 0
        state.clusters.seen(key("c"), cluster("c"))
        state.pause()
        assert len(state.clusters) == 0
        state.resume()
        state.clusters.seen(key("c"), cluster("c"))
        assert len(state.clusters) == 1
    finally:
        state.ticker.close()
        state.wakeups.close()
        if state.own_pool is not None:
            state.own_pool.shutdown()


def test_managed_fields_and_spec_copies_are_not_kept() -> None:
    bodies = LatestBodies()
    body = cluster(
        "c",
        managedFields=[{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
        annotations={
            "kubectl.kubernetes.io/last-applied-configuration": "{...}",
            "mongobench.io/last-handled-configuration": "{...}",
            "mongobench.io/rotate": "passwords",
        },
    )
    bodies.seen(key("c"), body)
    got = bodies.get(key("c"))
    assert got is not None
    assert "managedFields" not in got["metadata"]
    assert got["metadata"]["annotations"] == {"mongobench.io/rotate": "passwords"}
    assert got["spec"] == body["spec"] and got["status"] == body["status"]
