"""Unit tier: the MongoCluster phase is derived from what was observed, in the documented order
(cluster/status.py): Pending, Provisioning, Initializing, Ready, then Scaling, Degraded, Failed,
Deleting."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.mongo.model import DrainingProgress, ServerFacts
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench.mongocluster.decide.status import (
    Observed,
    Wiring,
    WorkloadState,
    compute_status,
    differs,
)

pytestmark = pytest.mark.unit

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:30Z"
LAYOUT = cluster_layout(
    "c",
    "ns",
    MongoClusterSpec.parse(
        {
            "version": "7.0.14",
            "topology": {"type": "Sharded", "sharded": {"shards": 2, "membersPerShard": 3}},
        }
    ),
)
SETS = ("c-cfg", "c-shard0", "c-shard1")
WIRED = Wiring(
    True,
    shards=frozenset({"c-shard0", "c-shard1"}),
    config_members=dict.fromkeys(SETS, 3),
)


def observed(
    ready: int = 3,
    replicas: int = 3,
    mongos: tuple[int, int] = (2, 2),
    wiring: Wiring | None = WIRED,
    **kw: Any,
) -> Observed:
    return Observed(
        statefulsets={name: WorkloadState(replicas, ready) for name in SETS},
        mongos=WorkloadState(*mongos),
        wiring=wiring,
        **kw,
    )


def phase(obs: Observed, previous: dict[str, Any] | None = None) -> str:
    status = compute_status(LAYOUT, obs, previous or {}, generation=1, created=T0, now=T1)
    return str(status["phase"])


READY_BEFORE = {"timings": {"readySeconds": 42.0}}


def test_first_creation_goes_pending_provisioning_initializing_ready() -> None:
    assert phase(Observed(statefulsets={})) == "Pending"
    assert phase(observed(ready=1, wiring=None)) == "Provisioning"
    assert phase(observed(wiring=Wiring(False, "c-cfg: initiating"))) == "Initializing"
    status = compute_status(LAYOUT, observed(), {}, generation=1, created=T0, now=T1)
    assert status["phase"] == "Ready"
    assert status["timings"]["readySeconds"] == 90.0  # the deploy time users measured by hand


def test_a_deployment_ready_within_its_first_second_is_timed_not_zero() -> None:
    # creationTimestamp has whole seconds; the timings are read on a sub-second clock.
    status = compute_status(
        LAYOUT,
        observed(),
        {},
        generation=1,
        created=T0,
        now=T0,
        clock="2026-01-01T00:00:00.430000Z",
    )
    timings = status["timings"]
    assert timings["provisionedSeconds"] == timings["readySeconds"] == 0.4
    # Conditions keep whole-second times, as the apiserver writes them.
    assert {c["lastTransitionTime"] for c in status["conditions"]} == {T0}


def test_after_ready_a_lost_pod_is_degraded_not_provisioning() -> None:
    assert phase(observed(ready=2), READY_BEFORE) == "Degraded"
    assert phase(observed(ready=2)) == "Provisioning"  # never Ready yet


def test_after_ready_a_shape_change_is_scaling_until_observed_done() -> None:
    more_mongos = Observed(
        statefulsets={n: WorkloadState(3, 3) for n in SETS},
        mongos=WorkloadState(2, 2),
        wiring=WIRED,
    )
    layout3 = cluster_layout(
        "c",
        "ns",
        MongoClusterSpec.parse(
            {
                "version": "7.0.14",
                "topology": {
                    "type": "Sharded",
                    "sharded": {"shards": 2, "membersPerShard": 3, "mongos": 3},
                },
            }
        ),
    )
    status = compute_status(layout3, more_mongos, READY_BEFORE, generation=2, created=T0, now=T1)
    assert status["phase"] == "Scaling"
    # A member still in the replica set configuration after the StatefulSet shrank: Scaling.
    leaving = Wiring(True, shards=WIRED.shards, config_members={**WIRED.config_members, "c-cfg": 4})
    assert phase(observed(wiring=leaving), READY_BEFORE) == "Scaling"
    assert phase(observed(), READY_BEFORE) == "Ready"


def test_failure_and_deletion_win() -> None:
    assert phase(observed(failure="Unauthorized"), READY_BEFORE) == "Failed"
    assert phase(observed(deleting=True, failure="x"), READY_BEFORE) == "Deleting"


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}


def test_a_draining_shard_keeps_the_cluster_scaling_and_listed_until_its_objects_go() -> None:
    # Spec went 3 -> 2 shards: c-shard2's StatefulSet stays while removeShard drains it.
    draining = Wiring(
        False,
        "removing shard c-shard2",
        shards=frozenset({"c-shard0", "c-shard1", "c-shard2"}),
        config_members=dict.fromkeys(SETS, 3),
        shards_listed=True,
        removal=DrainingProgress("c-shard2", "ongoing", remaining_chunks=7, remaining_dbs=1),
    )
    obs = Observed(
        statefulsets={**{n: WorkloadState(3, 3) for n in SETS}, "c-shard2": WorkloadState(3, 3)},
        mongos=WorkloadState(2, 2),
        wiring=draining,
        retiring=("c-shard2",),
    )
    status = compute_status(LAYOUT, obs, READY_BEFORE, generation=2, created=T0, now=T1)
    assert status["phase"] == "Scaling"
    assert status["draining"] == [
        {"shard": "c-shard2", "state": "Draining", "remainingChunks": 7, "remainingDatabases": 1}
    ]
    leaving = status["replicaSets"][-1]
    assert (leaving["name"], leaving["addedAsShard"], leaving["members"]) == ("c-shard2", True, 3)
    cond = conditions(status)
    assert cond["Ready"][:2] == ("False", "Scaling")
    assert cond["Updated"][:2] == ("False", "RemovingShards")
    assert "7 chunks and 1 databases left" in cond["Updated"][2]

    # A pass that could not reach mongos keeps the last progress instead of flapping it away.
    blind = replace(obs, wiring=Wiring(False, "mongos: no primary"))
    again = compute_status(LAYOUT, blind, status, generation=2, created=T0, now=T1)
    assert again["draining"] == status["draining"]

    # Drained, objects deleted: the entry and the draining list are gone, Ready again.
    done = compute_status(
        LAYOUT,
        observed(wiring=replace(WIRED, shards_listed=True)),
        status,
        generation=2,
        created=T0,
        now=T1,
    )
    assert done["phase"] == "Ready" and done["draining"] is None
    assert [rs["name"] for rs in done["replicaSets"]] == list(SETS)
    assert conditions(done)["Updated"][:2] == ("True", "Current")


def facts(host: str, version: str = "7.0.14", uptime: float = 10.0, conns: int = 3) -> ServerFacts:
    return ServerFacts(
        host=host,
        version=version,
        process="mongod",
        uptime_seconds=uptime,
        connections_current=conns,
        connections_available=800,
        storage_engine="wiredTiger",
        cache_max_bytes=1_610_612_736,
        cache_used_bytes=int(uptime * 1000),
        resident_mb=100,
        opcounters=(("query", int(uptime)),),
    )


def test_server_facts_in_status_are_the_stable_ones_so_idle_passes_write_nothing() -> None:
    def status_with(f: ServerFacts, previous: dict[str, Any]) -> dict[str, Any]:
        wiring = replace(WIRED, server={"c-shard0": f})
        return compute_status(
            LAYOUT, observed(wiring=wiring), previous, generation=1, created=T0, now=T1
        )

    first = status_with(facts("a"), {})
    shard0 = next(rs for rs in first["replicaSets"] if rs["name"] == "c-shard0")
    assert shard0["server"] == {
        "version": "7.0.14",
        "process": "mongod",
        "storageEngine": "wiredTiger",
        "cacheConfiguredBytes": 1_610_612_736,
    }
    # Uptime, connections, cache used and opcounters moved: nothing a user sees changed.
    assert not differs(first, status_with(facts("a", uptime=99.0, conns=40), first))
    # An upgrade is a visible change.
    assert differs(first, status_with(facts("a", version="8.0.4"), first))
    # A pass that did not ask (no facts) keeps what was seen.
    assert not differs(
        first, compute_status(LAYOUT, observed(), first, generation=1, created=T0, now=T1)
    )


def test_a_pass_that_did_not_list_the_shards_is_no_shape_change() -> None:
    """While the mongos pods restart (a roll between TLS modes, an upgrade) the wiring stops
    before listShards: that says nothing of the shards, so the cluster is Degraded while pods
    restart, never Scaling (seen at cluster tier in a sharded TLS roll)."""
    cut_short = Wiring(False, "waiting for mongos pods", config_members=WIRED.config_members)
    assert phase(observed(mongos=(2, 1), wiring=cut_short), READY_BEFORE) == "Degraded"
    # A shard listShards does not show yet, once it was asked: Scaling.
    added = Wiring(True, shards=frozenset({"c-shard0"}), config_members=WIRED.config_members,
                   shards_listed=True)  # fmt: skip
    assert phase(observed(wiring=added), READY_BEFORE) == "Scaling"
