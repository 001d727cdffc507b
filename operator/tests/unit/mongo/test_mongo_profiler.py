"""Unit tier: the profiler's and $collStats' planner (mongo/profiler.py): the commands sent and
what status keeps of the replies, never a value of the user's data."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mongobench.mongo import profiler
from mongobench.mongo.model import SlowOperation

pytestmark = pytest.mark.unit

SINCE = datetime(2026, 12, 7, 10, 0, tzinfo=UTC)
UNTIL = datetime(2026, 12, 7, 10, 5, tzinfo=UTC)


def test_the_profile_commands_on_and_off() -> None:
    assert profiler.profile_command(profiler.SLOW_ONLY, 50) == {"profile": 1, "slowms": 50}
    assert profiler.profile_command(profiler.OFF, 100) == {"profile": 0, "slowms": 100}
    assert profiler.profile_command(profiler.OFF) == {"profile": 0}  # no slowms was found


def test_the_steps_window_slowest_first_without_its_own_reads() -> None:
    find = profiler.slow_operations_find("ycsb", SINCE, UNTIL, 10)
    assert find["find"] == "system.profile"
    assert find["filter"] == {
        "ts": {"$gte": SINCE, "$lte": UNTIL},
        "ns": {"$ne": "ycsb.system.profile"},
    }
    assert (find["sort"], find["limit"]) == ({"millis": -1}, 10)
    assert "command" in find["projection"] and "planCacheShapeHash" in find["projection"]
    assert profiler.slow_operations_find("ycsb", SINCE, None, 3)["filter"]["ts"] == {"$gte": SINCE}


@pytest.mark.parametrize(
    ("command", "shape"),
    [
        (
            {"find": "usertable", "filter": {"_id": "user42"}, "limit": 1, "$db": "ycsb"},
            "find usertable {filter: {_id: ?}, limit: ?}",
        ),
        (  # an update's entry is its statement: no command name
            {"q": {"_id": "user7"}, "u": {"$set": {"field1": "x" * 100}}, "upsert": False},
            "{q: {_id: ?}, u: {$set: {field1: ?}}, upsert: ?}",
        ),
        (  # an array's distinct element shapes; the session's fields left out
            {
                "insert": "usertable",
                "documents": [{"_id": "a", "f": 1}, {"_id": "b", "f": 2}, {"_id": "c"}],
                "lsid": {"id": "uuid"},
                "txnNumber": 4,
                "$clusterTime": {"clusterTime": 1},
            },
            "insert usertable {documents: [{_id: ?, f: ?}, {_id: ?}]}",
        ),
        (
            {"aggregate": "usertable", "pipeline": [{"$match": {"field0": {"$gt": "m"}}}]},
            "aggregate usertable {pipeline: [{$match: {field0: {$gt: ?}}}]}",
        ),
        ({"getMore": 8123123, "collection": "usertable"}, "{getMore: ?, collection: ?}"),
    ],
)
def test_a_commands_shape_keeps_its_keys_and_no_value(
    command: dict[str, object], shape: str
) -> None:
    assert profiler.command_shape(command) == shape


def test_a_long_shape_or_plan_is_cut() -> None:
    wide = {"insert": "usertable", "documents": [{f"field{i}": "v" for i in range(200)}]}
    shape = profiler.command_shape(wide)
    assert len(shape) == profiler.SHAPE_CHARS and shape.endswith("…")
    plan = "OR_" + " ".join(f"IXSCAN {{ field{i}: 1 }}" for i in range(50))
    op = profiler.slow_operation({"op": "query", "planSummary": plan, "millis": 1}, None)
    assert op.plan_summary is not None and len(op.plan_summary) == profiler.SHAPE_CHARS


def test_an_entry_as_kept_prefers_the_80_shape_hash() -> None:
    entry = {
        "op": "query",
        "ns": "ycsb.usertable",
        "command": {"find": "usertable", "filter": {"_id": "user42"}},
        "millis": 312,
        "planSummary": "IXSCAN { field0: 1 }",
        "docsExamined": 1200,
        "keysExamined": 1200,
        "nreturned": 10,
        "queryHash": "OLDHASH",
        "planCacheShapeHash": "8HASH",
        "ts": SINCE,
    }
    op = profiler.slow_operation(entry, "sh1")
    assert op.as_status() == {
        "op": "query",
        "ns": "ycsb.usertable",
        "shape": "find usertable {filter: {_id: ?}}",
        "millis": 312,
        "planSummary": "IXSCAN { field0: 1 }",
        "docsExamined": 1200,
        "keysExamined": 1200,
        "nreturned": 10,
        "shard": "sh1",
        "queryHash": "8HASH",
    }
    assert "user42" not in repr(op)
    bare = profiler.slow_operation({"op": "insert", "ns": "ycsb.usertable", "millis": 7}, None)
    assert bare.as_status() == {"op": "insert", "ns": "ycsb.usertable", "shape": "", "millis": 7}


def test_the_slowest_across_shards_first() -> None:
    ops = [
        SlowOperation("query", "ycsb.usertable", "a", 100, shard="sh1"),
        SlowOperation("query", "ycsb.usertable", "a", 300, shard="sh0"),
        SlowOperation("query", "ycsb.usertable", "a", 100, shard="sh0"),
    ]
    assert [(o.millis, o.shard) for o in profiler.slowest(ops, 2)] == [(300, "sh0"), (100, "sh0")]


def test_disk_use_per_shard_and_its_total() -> None:
    docs = [
        {"shard": "sh1", "storageStats": {"count": 5, "size": 500, "storageSize": 200,
                                          "totalIndexSize": 50}},
        {"shard": "sh0", "storageStats": {"count": 3, "size": 300, "storageSize": 100,
                                          "totalIndexSize": 30}},
    ]  # fmt: skip
    use = profiler.disk_use("ycsb.usertable", docs)
    assert use.as_status() == {
        "collection": "ycsb.usertable",
        "documents": 8,
        "dataBytes": 800,
        "storageBytes": 300,
        "indexBytes": 80,
        "shards": [
            {"shard": "sh0", "documents": 3, "dataBytes": 300, "storageBytes": 100,
             "indexBytes": 30},
            {"shard": "sh1", "documents": 5, "dataBytes": 500, "storageBytes": 200,
             "indexBytes": 50},
        ],
    }  # fmt: skip
    one = profiler.disk_use("ycsb.usertable", [{"storageStats": {"count": 2, "size": 20}}])
    assert "shards" not in one.as_status() and one.as_status()["documents"] == 2
    assert profiler.disk_use("ycsb.usertable", []).as_status()["documents"] == 0
