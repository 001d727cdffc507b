"""Unit tier: the pure plan of a sharded collection's layout (mongobench.mongo.chunks): the
shardCollection, zone, split and moveChunk/moveRange documents for compound, hashed and ranged
keys, and how evenly the YCSB split points divide YCSB's real key names."""

from __future__ import annotations

import bisect
import itertools

import pytest

from mongobench.mongo import chunks
from mongobench.mongo.chunks import Chunk
from mongobench.mongo.model import Bound, KeyField, ShardingSpec, Zone

pytestmark = pytest.mark.unit

MIN, MAX = Bound.MIN, Bound.MAX
SHARDS = ["s0", "s1", "s2"]


def ycsb_hashed_key(keynum: int) -> str:
    """YCSB's key name in hashed insert order: "user" + fnvhash64(keynum) (Utils.fnvhash64)."""
    h = 0xCBF29CE484222325
    for _ in range(8):
        h ^= keynum & 0xFF
        keynum >>= 8
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    signed = h - (1 << 64) if h >= 1 << 63 else h
    return f"user{abs(signed)}"


@pytest.mark.parametrize("ordered", [False, True], ids=["hashed-order", "ordered"])
@pytest.mark.parametrize("n", [2, 4, 8, 16, 64])
def test_ycsb_split_points_give_every_chunk_a_fair_share_of_real_key_names(
    n: int, ordered: bool
) -> None:
    points = chunks.ycsb_split_points(n, hashed=not ordered, records=20_000)
    assert len(points) == n - 1 and list(points) == sorted(points)
    keys = [f"user{i}" if ordered else ycsb_hashed_key(i) for i in range(20_000)]
    counts = [0] * n
    for key in keys:
        counts[bisect.bisect_right(points, key)] += 1
    even = len(keys) / n
    # every chunk within 25% of its even share
    assert min(counts) > 0.75 * even and max(counts) < 1.25 * even, counts


def test_a_compound_ranged_key_is_split_at_the_ycsb_points_and_zone_bounds_in_order() -> None:
    spec = ShardingSpec(
        "ycsb",
        "usertable",
        initial_chunks=4,
        fields=(KeyField("_id"), KeyField("field0")),
        zones=(Zone("low", ("s0",), ("user1",), ("user3",)),),
    )
    assert chunks.shard_collection_command(spec) == {
        "shardCollection": "ycsb.usertable",
        "key": {"_id": 1, "field0": 1},
    }  # no numInitialChunks: that is for hashed keys
    middles = [c["middle"] for c in chunks.split_commands(spec)]
    # the zone's bounds and the YCSB points for 100,000 hashed names, the other field MinKey
    assert middles == [
        {"_id": "user1", "field0": MIN},
        {"_id": "user3", "field0": MIN},
        {"_id": "user3075259", "field0": MIN},
        {"_id": "user5150518", "field0": MIN},
        {"_id": "user7225777", "field0": MIN},
    ]
    assert chunks.zone_commands(spec) == [
        {"addShardToZone": "s0", "zone": "low"},
        {
            "updateZoneKeyRange": "ycsb.usertable",
            "min": {"_id": "user1", "field0": MIN},
            "max": {"_id": "user3", "field0": MIN},
            "zone": "low",
        },
    ]


def test_chunks_move_round_robin_a_zones_chunk_to_its_shard_and_a_rerun_moves_nothing() -> None:
    spec = ShardingSpec(
        "ycsb",
        "usertable",
        key="_id",
        hashed=False,
        split_points=("user3", "user6"),
        zones=(Zone("top", ("s2",), ("user6",), (MAX,)),),
    )
    bounds = [(MIN,), ("user3",), ("user6",), (MAX,)]
    # after the splits every chunk is still on the primary shard s0
    on_primary = [Chunk(lo, hi, "s0") for lo, hi in itertools.pairwise(bounds)]
    moves = chunks.move_commands(spec, on_primary, SHARDS)
    assert moves == [
        {
            "moveChunk": "ycsb.usertable",
            "bounds": [{"_id": "user3"}, {"_id": "user6"}],
            "to": "s1",
        },
        {"moveChunk": "ycsb.usertable", "bounds": [{"_id": "user6"}, {"_id": MAX}], "to": "s2"},
    ]
    placed = [Chunk(c.min, c.max, s) for c, s in zip(on_primary, ["s0", "s1", "s2"], strict=True)]
    assert chunks.move_commands(spec, placed, SHARDS) == []
    # Where the routers have moveRange (6.0+): the same moves, by min and max.
    assert chunks.move_commands(spec, on_primary, SHARDS, move_range=True) == [
        {
            "moveRange": "ycsb.usertable",
            "min": {"_id": "user3"},
            "max": {"_id": "user6"},
            "toShard": "s1",
        },
        {
            "moveRange": "ycsb.usertable",
            "min": {"_id": "user6"},
            "max": {"_id": MAX},
            "toShard": "s2",
        },
    ]


def test_a_hashed_key_with_zones_is_presplit_by_shard_collection_not_by_initial_chunks() -> None:
    zoned = ShardingSpec(
        "ycsb",
        "usertable",
        initial_chunks=8,
        fields=(KeyField("region"), KeyField("_id", hashed=True)),
        zones=(Zone("eu", ("s0",), ("eu",), ("us",)),),
    )
    assert chunks.presplits_hashed_zones(zoned)
    assert chunks.shard_collection_command(zoned) == {
        "shardCollection": "ycsb.usertable",
        "key": {"region": 1, "_id": "hashed"},
        "presplitHashedZones": True,
    }
    ranged = ShardingSpec("ycsb", "usertable", key="_id", hashed=False, zones=zoned.zones[:0])
    assert not chunks.presplits_hashed_zones(ranged)
    plain = ShardingSpec("ycsb", "usertable", initial_chunks=8)  # hashed _id, no zones
    assert "presplitHashedZones" not in chunks.shard_collection_command(plain)


def test_a_hashed_key_leaves_chunks_to_the_server_and_numeric_points_sort_before_strings() -> None:
    hashed = ShardingSpec(
        "ycsb", "usertable", initial_chunks=8, fields=(KeyField("_id", hashed=True),)
    )
    assert chunks.shard_collection_command(hashed)["numInitialChunks"] == 8
    assert chunks.split_commands(hashed) == []
    assert chunks.move_commands(hashed, [Chunk((MIN,), (MAX,), "s0")], SHARDS) == []
    # a compound key with the hashed field second: no numInitialChunks (MongoDB refuses it)
    second = ShardingSpec(
        "ycsb",
        "usertable",
        initial_chunks=8,
        fields=(KeyField("field0"), KeyField("_id", hashed=True)),
    )
    assert "numInitialChunks" not in chunks.shard_collection_command(second)
    ranged = ShardingSpec("d", "c", key="f", hashed=False, split_points=("g", 7, "a"))
    assert [c["middle"]["f"] for c in chunks.split_commands(ranged)] == [7, "a", "g"]
    # an unsplit ranged key stays where shardCollection put it
    plain = ShardingSpec("d", "c", key="f", hashed=False)
    assert chunks.move_commands(plain, [Chunk((MIN,), (MAX,), "s0")], SHARDS) == []


REGION_HASHED = (KeyField("region"), KeyField("_id", hashed=True))


@pytest.mark.parametrize(
    ("fields", "zones", "version", "why"),
    [
        ((KeyField("_id", hashed=True),), (Zone("a", ("s0",), (MIN,), (0,)),), None, "31412"),
        (REGION_HASHED, (Zone("eu", ("s0",), ("eu",), ("eu", MAX)),), None, "31390"),
        (REGION_HASHED, (Zone("eu", ("s0",), (MIN,), ("eu",)),), None, "31388"),
        (REGION_HASHED, (Zone("eu", ("s0",), ("eu", 0), ("us",)),), None, "31389"),
        (REGION_HASHED, (Zone("eu", ("s0",), ("eu", MIN, 1), ("us",)),), None, "31391"),
        (REGION_HASHED, (Zone("eu", ("s0",), ("eu",), ("us", "x")),), None, "64-bit hash"),
        ((KeyField("_id", hashed=True),), (), "8.0.4", "ignores numInitialChunks"),
    ],
)
def test_layouts_mongodb_refuses_or_ignores_are_named_in_one_line(
    fields: tuple[KeyField, ...], zones: tuple[Zone, ...], version: str | None, why: str
) -> None:
    if why == "31391":
        fields = (*REGION_HASHED, KeyField("ts"))
    spec = ShardingSpec("ycsb", "t", fields=fields, zones=zones, initial_chunks=8)
    problem = chunks.sharding_problem(spec, version)
    assert problem is not None and why in problem and "\n" not in problem


@pytest.mark.parametrize("version", ["5.0.31", "6.0.20", "7.0.14", "8.0.4", None])
def test_layouts_mongodb_takes_pass_and_hashed_bounds_are_number_long(version: str | None) -> None:
    whole = ShardingSpec("ycsb", "t", zones=(Zone("all", ("s0",), (MIN,), (MAX,)),))
    regions = ShardingSpec(
        "ycsb",
        "t",
        fields=REGION_HASHED,
        zones=(Zone("eu", ("s0",), ("eu",), ("us", 7)), Zone("us", ("s1",), ("us",), (MAX,))),
    )
    for spec in (whole, regions):
        assert chunks.sharding_problem(spec, version) is None
    eu = chunks.zone_commands(regions)[-2]
    assert type(eu["max"]["_id"]).__name__ == "Int64" and eu["max"]["_id"] == 7
    # numInitialChunks is honoured before 7.2: no problem there
    honoured = chunks.sharding_problem(ShardingSpec("ycsb", "t", initial_chunks=8), version)
    assert (honoured is None) == (version != "8.0.4")
