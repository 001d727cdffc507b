"""Unit tier: the MongoCluster sync's pure decisions (mongocluster.decide.sync_plan): which sets
MongoDB
administration may touch, when a scale-down is held or released and the workloads applied again,
which retiring shards' objects can go, which Events a sync posts, and which steps it takes."""

from __future__ import annotations

import pytest

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.k8s import conditions as cond
from mongobench.mongo.model import DrainingProgress
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench.mongocluster.decide.status import Wiring, WorkloadState
from mongobench.mongocluster.decide.sync_plan import (
    Outcome,
    SyncObservation,
    SyncStep,
    drained,
    held_replicas,
    ready_sets,
    reapply,
    shard_events,
    sync_events,
    sync_steps,
)

pytestmark = pytest.mark.unit

LAYOUT = cluster_layout(
    "c", "ns", MongoClusterSpec.parse({"version": "7.0.14", "topology": {"type": "ReplicaSet"}})
)
SHARDED = cluster_layout(
    "c",
    "ns",
    MongoClusterSpec.parse(
        {
            "version": "7.0.14",
            "topology": {"type": "Sharded", "sharded": {"shards": 1, "membersPerShard": 1}},
        }
    ),
)


def in_config(members: int) -> dict[str, object]:
    """A status whose replica set c-rs0 has `members` in its configuration."""
    states = [{"host": f"h{i}"} for i in range(members)]
    return {"replicaSets": [{"name": "c-rs0", "initialized": True, "memberStates": states}]}


def test_only_sets_with_every_pod_ready_are_administered() -> None:
    assert ready_sets(LAYOUT, {"c-rs0": WorkloadState(3, 2)}, None) == frozenset()
    assert ready_sets(LAYOUT, {"c-rs0": WorkloadState(3, 3)}, None) == {"c-rs0"}
    mongos = WorkloadState(2, 2)
    assert "mongos" in ready_sets(SHARDED, {}, mongos)


def test_a_scale_down_is_held_while_mongodb_lists_the_members_then_applied() -> None:
    five = {"c-rs0": WorkloadState(5, 5)}
    assert held_replicas(LAYOUT, five, in_config(5)) == {"c-rs0": 5}
    assert held_replicas(LAYOUT, five, in_config(3)) == {}
    # Held before and still held: nothing to apply; released now: applied with the spec's size.
    assert reapply(LAYOUT, five, in_config(5), in_config(5), False) is None
    assert reapply(LAYOUT, five, in_config(5), in_config(3), False) == {}
    # Over the spec's size and not held (e.g. a hold lost with an operator restart): applied.
    assert reapply(LAYOUT, five, {}, in_config(3), False) == {}
    three = {"c-rs0": WorkloadState(3, 3)}
    assert reapply(LAYOUT, three, in_config(3), in_config(3), False) is None
    assert reapply(LAYOUT, three, in_config(3), in_config(3), True) == {}  # mongos to roll


def test_a_retiring_shard_goes_only_once_mongodb_no_longer_lists_it() -> None:
    from mongobench.mongocluster.decide.shards import retiring_shards

    retiring = retiring_shards(SHARDED, {"c-shard0": 1, "c-shard1": 1})
    assert [rs.name for rs in retiring] == ["c-shard1"]
    assert drained(retiring, None) == ()
    assert drained(retiring, Wiring(False, shards=frozenset())) == ()  # not listed this pass
    listed = Wiring(False, shards=frozenset({"c-shard0", "c-shard1"}), shards_listed=True)
    assert drained(retiring, listed) == ()
    gone = Wiring(False, shards=frozenset({"c-shard0"}), shards_listed=True)
    assert [rs.name for rs in drained(retiring, gone)] == ["c-shard1"]


def test_shard_events_tell_a_drain_starting_and_each_shard_removed() -> None:
    started = Wiring(False, removal=DrainingProgress("c-shard1", "started"))
    assert [e[1] for e in shard_events(started, [], "Retain")] == [cond.EVENT_SHARD_DRAINING]
    ongoing = Wiring(False, removal=DrainingProgress("c-shard1", "ongoing"))
    assert shard_events(ongoing, [], "Retain") == []
    (removed,) = shard_events(None, ["c-shard1"], "Retain")
    assert removed[:2] == (cond.NORMAL, cond.EVENT_SHARD_REMOVED)
    assert "deletionPolicy Retain" in removed[2]


def test_a_sync_tells_what_changed_once() -> None:
    assert sync_events(Outcome(cond.PHASE_READY, changed=False)) == []
    assert sync_events(Outcome(cond.PHASE_READY, changed=True)) == [
        (cond.NORMAL, cond.EVENT_READY, "all members ready and wired")
    ]
    failing = Outcome(cond.PHASE_FAILED, changed=True, failure="not authorized")
    assert sync_events(failing) == [(cond.WARNING, cond.EVENT_MONGODB_ERROR, "not authorized")]
    again = Outcome(cond.PHASE_FAILED, changed=False, failure="not authorized")
    assert sync_events(again) == []  # the same failure on every retry: told once
    fcv = Outcome(cond.PHASE_INITIALIZING, changed=True, fcv_set="8.0", storage_warning="small")
    assert [e[1] for e in sync_events(fcv)] == [cond.EVENT_NOT_EXPANDABLE, cond.EVENT_FCV_SET]


S = SyncStep
# Every live cluster's steps apart from MongoDB's, in their order.
LIVE = (S.GROW_CLAIMS, S.TLS_RENEWAL, S.PLACEMENT, S.REMOVE_DRAINED_SHARDS, S.CONVERGE)


def seen(**changes: bool) -> SyncObservation:
    """A live replica set, not ready yet, no rotation, no CA-issued certificates."""
    base = {
        "deleting": False,
        "left_behind": False,
        "ready": False,
        "rotation_under_way": False,
        "sharded": False,
        "ca_issued_tls": False,
    }
    return SyncObservation(**(base | changes))


@pytest.mark.parametrize(
    ("observation", "steps"),
    [
        pytest.param(seen(), LIVE, id="pods-not-ready: nothing of MongoDB"),
        pytest.param(
            seen(ready=True),
            (S.GROW_CLAIMS, S.ADMINISTER, *LIVE[1:]),
            id="ready: administered",
        ),
        pytest.param(
            seen(ready=True, rotation_under_way=True),
            (S.GROW_CLAIMS, S.ROTATE_CREDENTIALS, S.ADMINISTER, *LIVE[1:]),
            id="rotation: before the wiring that logs in with its passwords",
        ),
        pytest.param(seen(rotation_under_way=True), LIVE, id="rotation waits for ready pods"),
        pytest.param(
            seen(sharded=True, ca_issued_tls=True, ready=True),
            (S.GROW_CLAIMS, S.MONGOS_UPGRADE, S.ISSUE_CERTIFICATES, S.ADMINISTER, *LIVE[1:]),
            id="sharded with a CA: mongos observed, certificates issued, before MongoDB",
        ),
        pytest.param(
            seen(left_behind=True, ready=True, rotation_under_way=True),
            (S.PUBLISH_WAITING,),
            id="a predecessor's objects: only its wait reported",
        ),
        pytest.param(
            seen(deleting=True, ready=True, sharded=True, ca_issued_tls=True),
            (S.REMOVE_DRAINED_SHARDS, S.CONVERGE),
            id="deleting: nothing grown, issued or administered",
        ),
        pytest.param(
            seen(deleting=True, left_behind=True, rotation_under_way=True, ready=True),
            (S.REMOVE_DRAINED_SHARDS, S.CONVERGE),
            id="deleting with a predecessor's objects: no wait on them",
        ),
    ],
)
def test_a_sync_takes_its_steps_in_order(
    observation: SyncObservation, steps: tuple[S, ...]
) -> None:
    assert sync_steps(observation) == steps
