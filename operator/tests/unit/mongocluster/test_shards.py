"""Unit tier: which shards a shrinking spec removes, in which order, and what status says."""

from __future__ import annotations

import pytest

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.mongo.model import DrainingProgress, ShardInfo
from mongobench.mongocluster.build.layout import ClusterLayout, cluster_layout
from mongobench.mongocluster.decide.shards import (
    draining_message,
    draining_status,
    plan_removals,
    retiring_shards,
)

pytestmark = pytest.mark.unit


def layout(shards: int, name: str = "c") -> ClusterLayout:
    spec = {"version": "7.0.14", "topology": {"type": "Sharded", "sharded": {"shards": shards}}}
    return cluster_layout(name, "ns", MongoClusterSpec.parse(spec))


def listed(*names: str, draining: str | None = None) -> list[ShardInfo]:
    return [
        ShardInfo(n, f"{n}/{n}-0.{n}-hl.ns.svc.cluster.local:27017", n == draining) for n in names
    ]


def test_retiring_shards_are_the_statefulsets_beyond_the_spec_highest_first() -> None:
    sets = {"c-cfg": 3, "c-shard0": 3, "c-shard1": 3, "c-shard2": 3, "c-shard10": 1}
    retiring = retiring_shards(layout(2), sets)
    assert [(rs.name, rs.members) for rs in retiring] == [("c-shard10", 1), ("c-shard2", 3)]
    assert retiring_shards(layout(3), {"c-shard0": 3, "c-shard1": 3, "c-shard2": 3}) == ()
    # Another cluster's StatefulSet with a similar name is never taken for ours.
    assert retiring_shards(layout(1, "c"), {"c-x-shard5": 3, "cc-shard5": 3}) == ()


def test_replica_set_cluster_never_retires_anything() -> None:
    rs = cluster_layout("c", "ns", MongoClusterSpec.parse({"version": "7.0.14"}))
    assert retiring_shards(rs, {"c-shard3": 3}) == ()


def test_the_highest_numbered_shard_drains_first_the_others_wait() -> None:
    plan = plan_removals(layout(1), listed("c-shard0", "c-shard1", "c-shard2"))
    assert plan.current is not None and plan.current.id == "c-shard2"
    assert plan.waiting == ("c-shard1",)


def test_a_shard_already_draining_is_continued_not_a_second_one_started() -> None:
    plan = plan_removals(layout(1), listed("c-shard0", "c-shard1", "c-shard2", draining="c-shard1"))
    assert plan.current is not None and plan.current.id == "c-shard1"
    assert plan.waiting == ("c-shard2",)


def test_nothing_to_remove_when_listshards_matches_the_spec() -> None:
    plan = plan_removals(layout(2), listed("c-shard0", "c-shard1"))
    assert plan.current is None and plan.waiting == ()


def test_a_shard_added_by_hand_is_left_alone() -> None:
    plan = plan_removals(layout(1), listed("c-shard0", "archive"))
    assert plan.current is None


def test_a_draining_shard_the_spec_wants_again_finishes_its_drain_first() -> None:
    # Scaled 3->2 then back to 3 while shard2 drained: MongoDB cannot stop it; it finishes and
    # the shard is added again by the next pass.
    plan = plan_removals(layout(3), listed("c-shard0", "c-shard1", "c-shard2", draining="c-shard2"))
    assert plan.current is not None and plan.current.id == "c-shard2"


def test_status_shows_what_is_left_only_once_mongodb_counted_it() -> None:
    started = DrainingProgress("c-shard2", "started", message="draining started successfully")
    ongoing = DrainingProgress("c-shard2", "ongoing", 12, 1, jumbo_chunks=2, dbs_to_move=("ycsb",))
    assert draining_status(started, ("c-shard1",)) == [
        {"shard": "c-shard2", "state": "Draining", "message": "draining started successfully"},
        {
            "shard": "c-shard1",
            "state": "Pending",
            "message": "waits: MongoDB drains one shard at a time",
        },
    ]
    assert draining_status(ongoing, ()) == [
        {
            "shard": "c-shard2",
            "state": "Draining",
            "remainingChunks": 12,
            "remainingDatabases": 1,
            "jumboChunks": 2,
        }
    ]
    assert draining_status(DrainingProgress("c-shard2", "completed"), ())[0]["state"] == "Completed"
    assert draining_status(None, ()) == []
    assert (
        draining_message(ongoing, ("c-shard1",))
        == "removing shard c-shard2: 12 chunks and 1 databases left; then c-shard1"
    )
