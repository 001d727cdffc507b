"""Protocol tier: sharding administration through a scripted mongos (mockupdb).

The mongos replies (listShards, addShard, removeShard, $collStats, config.chunks) are scripted
with real shapes and error codes; what a real mongos does with them is not proven here.
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import Binary, MaxKey, MinKey
from mongo_wirepeer import Cluster, body, run

from mongobench.mongo import (
    MongoAdmin,
    Mongos,
    PermanentMongoError,
    ReplicaSetSpec,
    Role,
    ShardingSpec,
    TransientMongoError,
)
from mongobench.mongo.model import KeyField, Zone

pytestmark = pytest.mark.protocol

ROUTERS = ("mongos-0.mongos-hl.bench.svc.cluster.local:27017",)
MONGOS = Mongos(ROUTERS)
SHARD = ReplicaSetSpec(
    "sh0",
    Role.SHARD,
    tuple(f"sh0-{i}.sh0-hl.bench.svc.cluster.local:27018" for i in range(3)),
)
SEED = "sh0/" + ",".join(SHARD.members)


def _mongos(cluster: Cluster, release: str = "7.0.14") -> tuple[MongoAdmin, Any]:
    peer = cluster.peer(ROUTERS[0], {"isWritablePrimary": True, "msg": "isdbgrid"})
    # serverStatus: the routers' release, which decides what a layout may ask of them
    peer.canned["serverstatus"] = {"version": release, "process": "mongos"}
    return cluster.admin(), peer


def test_add_shard_sends_the_seed_list_and_name(cluster: Cluster) -> None:
    admin, router = _mongos(cluster)
    result = run(admin.ensure_shard, MONGOS, SHARD)
    router.receives().ok(shards=[])
    request = router.receives()
    assert body(request) == {"addShard": SEED, "name": "sh0"}
    request.ok(shardAdded="sh0")
    shard = result()
    assert (shard.id, shard.host) == ("sh0", SEED)


def test_already_listed_shard_is_not_added_again(cluster: Cluster) -> None:
    admin, router = _mongos(cluster)
    router.canned["listshards"] = {"shards": [{"_id": "sh0", "host": SEED, "state": 1}]}
    assert admin.ensure_shard(MONGOS, SHARD).id == "sh0"
    router.assert_silent()


def test_host_already_a_shard_error_resolves_to_the_listed_shard(cluster: Cluster) -> None:
    admin, router = _mongos(cluster)
    result = run(admin.ensure_shard, MONGOS, SHARD)
    router.receives().ok(shards=[])
    router.receives().command_err(
        20, f"'{SEED}' is already a member of the existing shard 'sh0'", codeName="IllegalOperation"
    )
    router.receives().ok(shards=[{"_id": "sh0", "host": SEED, "state": 1}])
    assert result().id == "sh0"


def test_add_shard_refusal_is_permanent_with_server_message(cluster: Cluster) -> None:
    admin, router = _mongos(cluster)
    router.canned["listshards"] = {"shards": []}
    result = run(admin.ensure_shard, MONGOS, SHARD)
    msg = "in seed list sh0/..., host ... does not belong to replica set sh0"
    router.receives().command_err(96, msg, codeName="OperationFailed")
    with pytest.raises(PermanentMongoError) as err:
        result()
    assert err.value.code == 96 and msg in err.value.message


def test_list_shards_reports_draining(cluster: Cluster) -> None:
    admin, router = _mongos(cluster)
    router.canned["listshards"] = {
        "shards": [
            {"_id": "sh0", "host": SEED, "state": 1},
            {"_id": "sh1", "host": "sh1/a:27018", "state": 1, "draining": True},
        ]
    }
    assert [(s.id, s.draining) for s in admin.list_shards(MONGOS)] == [
        ("sh0", False),
        ("sh1", True),
    ]


def test_remove_shard_reports_draining_progress_until_completed(cluster: Cluster) -> None:
    admin, router = _mongos(cluster)
    result = run(admin.remove_shard, MONGOS, "sh1")
    request = router.receives()
    assert body(request) == {"removeShard": "sh1"}
    request.ok(msg="draining started successfully", state="started", shard="sh1", dbsToMove=[])
    assert result().state == "started"

    result = run(admin.remove_shard, MONGOS, "sh1")
    router.receives().ok(
        msg="draining ongoing",
        state="ongoing",
        remaining={"chunks": 12, "dbs": 0, "jumboChunks": 1},
        dbsToMove=[],
    )
    progress = result()
    assert (progress.state, progress.remaining_chunks, progress.jumbo_chunks) == ("ongoing", 12, 1)
    assert not progress.completed

    result = run(admin.remove_shard, MONGOS, "sh1")
    router.receives().ok(msg="removeshard completed successfully", state="completed", shard="sh1")
    assert result().completed


def test_remove_shard_moves_one_primary_database_per_call(cluster: Cluster) -> None:
    admin, router = _mongos(cluster)
    result = run(admin.remove_shard, MONGOS, "sh1", move_primaries_to="sh0")
    router.receives().ok(
        state="ongoing", remaining={"chunks": 0, "dbs": 2}, dbsToMove=["ycsb", "other"]
    )
    request = router.receives()
    assert body(request) == {"movePrimary": "ycsb", "to": "sh0"}
    request.ok()
    assert result().dbs_to_move == ("ycsb", "other")
    router.assert_silent()


def test_removed_shard_that_no_longer_exists_is_completed(cluster: Cluster) -> None:
    admin, router = _mongos(cluster)
    result = run(admin.remove_shard, MONGOS, "sh1")
    router.receives().command_err(70, "Shard sh1 not found", codeName="ShardNotFound")
    assert result().completed


def test_second_shard_draining_is_transient(cluster: Cluster) -> None:
    admin, router = _mongos(cluster)
    result = run(admin.remove_shard, MONGOS, "sh2")
    router.receives().command_err(
        117,
        "Can't have more than one draining shard at a time",
        codeName="ConflictingOperationInProgress",
    )
    with pytest.raises(TransientMongoError, match="more than one draining shard"):
        result()


def test_router_that_is_not_a_mongos_is_permanent(cluster: Cluster) -> None:
    cluster.peer(ROUTERS[0], {"isWritablePrimary": True})
    with pytest.raises(PermanentMongoError, match="not a mongos"):
        cluster.admin().list_shards(MONGOS)


# ---- benchmark collection -------------------------------------------------------------------


def test_hashed_shard_collection_with_initial_chunks(cluster: Cluster) -> None:
    admin, router = _mongos(cluster)
    spec = ShardingSpec("ycsb", "usertable", "_id", hashed=True, initial_chunks=8)
    result = run(admin.shard_collection, MONGOS, spec)
    find = router.receives()
    assert body(find) == {"find": "collections", "filter": {"_id": "ycsb.usertable"}, "limit": 1}
    assert find.doc["$db"] == "config"
    find.ok(cursor={"id": 0, "ns": "config.collections", "firstBatch": []})
    enable = router.receives()
    assert body(enable) == {"enableSharding": "ycsb"}
    enable.ok()
    shard = router.receives()
    assert body(shard) == {
        "shardCollection": "ycsb.usertable",
        "key": {"_id": "hashed"},
        "numInitialChunks": 8,
    }
    shard.ok(collectionsharded="ycsb.usertable")
    assert result() == "sharded"


def test_ranged_shard_collection_presplits_and_tolerates_existing_boundaries(
    cluster: Cluster,
) -> None:
    admin, router = _mongos(cluster)
    router.canned["find"] = {"cursor": {"id": 0, "ns": "config.collections", "firstBatch": []}}
    router.canned["listshards"] = {"shards": [{"_id": "sh0", "host": SEED, "state": 1}]}
    spec = ShardingSpec("ycsb", "usertable", "_id", hashed=False, split_points=("user3", "user6"))
    result = run(admin.shard_collection, MONGOS, spec)
    router.receives().command_err(23, "already enabled", codeName="AlreadyInitialized")
    shard = router.receives()
    assert body(shard) == {"shardCollection": "ycsb.usertable", "key": {"_id": 1}}
    shard.ok()
    first = router.receives()
    assert body(first) == {"split": "ycsb.usertable", "middle": {"_id": "user3"}}
    first.command_err(
        1, "cannot split on initial or final chunk's key; split point is a boundary key"
    )
    second = router.receives()
    assert body(second) == {"split": "ycsb.usertable", "middle": {"_id": "user6"}}
    second.ok()
    assert result() == "sharded"


@pytest.mark.parametrize("release", ["5.0.31", "7.0.14"])
def test_compound_ranged_key_splits_zones_and_moves_chunks_with_min_and_max_keys(
    cluster: Cluster, release: str
) -> None:
    """What goes over the wire for a compound ranged key with a zone: MinKey/MaxKey as BSON;
    the moves by moveRange where the routers have it (6.0+), else moveChunk."""
    admin, router = _mongos(cluster, release)
    spec = ShardingSpec(
        "ycsb",
        "usertable",
        split_points=(("user5",),),
        fields=(KeyField("_id"), KeyField("field0")),
        zones=(Zone("low", ("sh1",), ("user1",), ("user5",)),),
    )
    empty = {"id": 0, "ns": "config.collections", "firstBatch": []}
    result = run(admin.shard_collection, MONGOS, spec)
    router.receives().ok(cursor=empty)
    router.receives().ok()  # enableSharding
    shard = router.receives()
    assert body(shard) == {"shardCollection": "ycsb.usertable", "key": {"_id": 1, "field0": 1}}
    shard.ok()
    middles = []
    for _ in range(2):
        split = router.receives()
        middles.append(body(split)["middle"])
        split.ok()
    assert middles == [{"_id": "user1", "field0": MinKey()}, {"_id": "user5", "field0": MinKey()}]
    router.receives().ok(
        shards=[
            {"_id": "sh0", "host": SEED, "state": 1},
            {"_id": "sh1", "host": "sh1/x", "state": 1},
        ]
    )
    zone = router.receives()
    assert body(zone) == {"addShardToZone": "sh1", "zone": "low"}
    zone.ok()
    zone_range = router.receives()
    assert body(zone_range) == {
        "updateZoneKeyRange": "ycsb.usertable",
        "min": {"_id": "user1", "field0": MinKey()},
        "max": {"_id": "user5", "field0": MinKey()},
        "zone": "low",
    }
    zone_range.ok()
    uuid = Binary(b"0123456789abcdef", 4)
    entry = {"_id": "ycsb.usertable", "key": {"_id": 1, "field0": 1}, "uuid": uuid}
    router.receives().ok(cursor={**empty, "firstBatch": [entry]})
    find_chunks = router.receives()
    assert body(find_chunks)["filter"] == {"uuid": uuid} and find_chunks.doc["$db"] == "config"
    lo, b1, b5 = (
        {"_id": MinKey(), "field0": MinKey()},
        {"_id": "user1", "field0": MinKey()},
        {"_id": "user5", "field0": MinKey()},
    )
    hi = {"_id": MaxKey(), "field0": MaxKey()}
    find_chunks.ok(
        cursor={
            "id": 0,
            "ns": "config.chunks",
            "firstBatch": [
                {"min": lo, "max": b1, "shard": "sh0"},
                {"min": b1, "max": b5, "shard": "sh0"},
                {"min": b5, "max": hi, "shard": "sh0"},
            ],
        }
    )
    # round-robin outside the zone (sh0, then sh1), the zone's chunk on its shard sh1
    moves = []
    for _ in range(2):
        move = router.receives()
        moves.append(body(move))
        move.ok()
    if release.startswith("5."):
        assert moves == [
            {"moveChunk": "ycsb.usertable", "bounds": [b1, b5], "to": "sh1"},
            {"moveChunk": "ycsb.usertable", "bounds": [b5, hi], "to": "sh1"},
        ]
    else:
        assert moves == [
            {"moveRange": "ycsb.usertable", "min": b1, "max": b5, "toShard": "sh1"},
            {"moveRange": "ycsb.usertable", "min": b5, "max": hi, "toShard": "sh1"},
        ]
    assert result() == "sharded, 2 chunk(s) moved"
    # the routers' release (serverStatus, canned): checked before anything, then for the moves
    assert [body(r) for r in router.auto] == [{"serverStatus": 1}] * 2


def test_already_sharded_with_the_same_key_sends_nothing(cluster: Cluster) -> None:
    admin, router = _mongos(cluster)
    entry = {"_id": "ycsb.usertable", "key": {"_id": "hashed"}, "unique": False}
    router.canned["find"] = {"cursor": {"id": 0, "ns": "config.collections", "firstBatch": [entry]}}
    assert admin.shard_collection(MONGOS, ShardingSpec("ycsb", "usertable")) == "already sharded"
    router.assert_silent()


def test_already_sharded_with_another_key_is_permanent(cluster: Cluster) -> None:
    admin, router = _mongos(cluster)
    entry = {"_id": "ycsb.usertable", "key": {"_id": 1}}
    router.canned["find"] = {"cursor": {"id": 0, "ns": "config.collections", "firstBatch": [entry]}}
    with pytest.raises(PermanentMongoError, match="already sharded"):
        admin.shard_collection(MONGOS, ShardingSpec("ycsb", "usertable", hashed=True))


def test_distribution_counts_documents_and_chunks_per_shard(cluster: Cluster) -> None:
    admin, router = _mongos(cluster)
    uuid = Binary(b"0123456789abcdef", 4)
    result = run(admin.distribution, MONGOS, "ycsb", "usertable")
    router.receives().ok(
        cursor={
            "id": 0,
            "ns": "config.collections",
            "firstBatch": [{"_id": "ycsb.usertable", "key": {"_id": "hashed"}, "uuid": uuid}],
        }
    )
    stats = router.receives()
    assert body(stats) == {
        "aggregate": "usertable",
        "pipeline": [{"$collStats": {"count": {}, "storageStats": {}}}],
        "cursor": {},
    }
    assert stats.doc["$db"] == "ycsb"
    stats.ok(
        cursor={
            "id": 0,
            "ns": "ycsb.usertable",
            "firstBatch": [
                {
                    "ns": "ycsb.usertable",
                    "shard": "sh0",
                    "count": 750,
                    "storageStats": {"size": 825000, "count": 750},
                },
                {"ns": "ycsb.usertable", "shard": "sh1", "count": 250},
            ],
        }
    )
    chunks = router.receives()
    assert body(chunks)["pipeline"] == [
        {"$match": {"uuid": uuid}},
        {"$group": {"_id": "$shard", "n": {"$sum": 1}}},
    ]
    chunks.ok(
        cursor={
            "id": 0,
            "ns": "config.chunks",
            "firstBatch": [{"_id": "sh0", "n": 3}, {"_id": "sh1", "n": 1}],
        }
    )
    dist = result()
    assert dist.sharded and dist.total_documents == 1000
    assert [(s.shard, s.documents, s.chunks, s.percent) for s in dist.shards] == [
        ("sh0", 750, 3, 75.0),
        ("sh1", 250, 1, 25.0),
    ]
    # storageStats.size where the server reports it, None where it does not
    assert [s.data_bytes for s in dist.shards] == [825000, None]


def test_distribution_of_a_missing_collection_is_empty(cluster: Cluster) -> None:
    admin, router = _mongos(cluster)
    router.canned["find"] = {"cursor": {"id": 0, "ns": "config.collections", "firstBatch": []}}
    result = run(admin.distribution, MONGOS, "ycsb", "usertable")
    router.receives().command_err(26, "ns does not exist", codeName="NamespaceNotFound")
    dist = result()
    assert not dist.sharded and dist.shards == ()
