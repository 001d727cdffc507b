"""Pure planning of a sharded collection's layout: the commands that shard it, zone it, split
it and move its chunks. No I/O: admin.py sends what these return, reading back only where the
chunks are (config.chunks) to decide the moves.

What is supported:
- a hashed key (one field or a compound key with one hashed field): ``shardCollection`` with
  ``numInitialChunks`` when the hashed field comes first; the balancer spreads them. With zones,
  ``presplitHashedZones`` instead: the zones are declared before ``shardCollection``, which then
  creates and places the chunks of every zone range itself (4.4+, every supported release);
- a ranged key: ``split`` at explicit points, or where YCSB's key names (``user<number>``,
  compared as strings) divide evenly for the run's insert order and record count, when the
  first field is ``_id``; then the chunks are moved round-robin across the shards with
  ``moveRange`` by exact bounds where the routers have it (6.0+: versions.Capabilities), else
  ``moveChunk`` (5.0), each chunk inside a zone round-robin across that zone's shards;
- zones: ``addShardToZone`` per shard, ``updateZoneKeyRange`` per range; zone bounds are split
  points too, so no chunk straddles a zone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mongobench.mongo import driver
from mongobench.mongo.model import Bound, KeyValue, ShardingSpec
from mongobench.mongo.versions import UnsupportedVersion, capabilities, series

# YCSB's key names are "user" + a decimal number, compared as strings. Read as a decimal
# fraction 0.d1d2..., ordered keys (0..n-1) fill [0.1, 1) about evenly; hashed keys (the absolute
# value of a 64-bit FNV hash, uniform below 2**63) are mostly 19 digits long, filling
# [0.1, 0.922...) (2**63 / 10**19), while the shorter ones fill [0.1, 1).
YCSB_PREFIX = "user"
_HASHED_TOP = 2**63 / 10**19
_HASHED_LONG = (2**63 - 10**18) / 2**63  # share of 19-digit hashes


def _uniform(f: float, low: float, high: float) -> float:
    return min(max((f - low) / (high - low), 0.0), 1.0)


def _hashed_share_below(f: float) -> float:
    """The share of hashed key names below the fraction ``f``."""
    long = _uniform(f, 0.1, _HASHED_TOP)
    return _HASHED_LONG * long + (1 - _HASHED_LONG) * _uniform(f, 0.1, 1.0)


def _ordered_below(digits: str, records: int) -> int:
    """How many of the names user0..user<records-1> sort before "user" + ``digits``."""
    below = 0
    for length in range(1, len(str(max(records - 1, 0))) + 1):
        lo, hi = (0 if length == 1 else 10 ** (length - 1)), min(10**length, records)
        if lo >= hi:
            continue
        head = int(digits[:length].ljust(length, "0"))
        below += min(max(head - lo, 0), hi - lo)
        if len(digits) > length and lo <= int(digits[:length]) < hi:
            below += 1  # a proper prefix of the point sorts before it
    return below


def ycsb_split_points(
    chunks: int, *, hashed: bool = True, records: int = 100_000
) -> tuple[str, ...]:
    """``chunks - 1`` key names splitting YCSB's ``records`` key names (hashed or ordered
    insert order) into ``chunks`` near-even ranges."""
    if chunks <= 1:
        return ()
    digits = len(str(max(chunks, records))) + 1
    points: list[str] = []
    for k in range(1, chunks):
        low, high = 10 ** (digits - 1), 10**digits - 1  # the point's digits, as an integer
        while low < high:  # the smallest point with k/chunks of the names below it
            mid = (low + high) // 2
            if hashed:
                enough = _hashed_share_below(mid / 10**digits) >= k / chunks
            else:
                enough = _ordered_below(str(mid), records) >= k * records / chunks
            low, high = (low, mid) if enough else (mid + 1, high)
        text = str(low).rstrip("0")
        if not points or points[-1] != text:
            points.append(text)
    return tuple(YCSB_PREFIX + p for p in points)


def _rank(value: Any) -> tuple[int, Any]:
    """BSON comparison order for the values a spec can hold: MinKey < numbers < strings < MaxKey."""
    if value is Bound.MIN:
        return (0, 0)
    if value is Bound.MAX:
        return (9, 0)
    if isinstance(value, bool):
        return (5, value)
    if isinstance(value, int | float):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (3, repr(value))


def order(value: KeyValue) -> tuple[tuple[int, Any], ...]:
    """Sort key of a full key value (compound keys compare field by field)."""
    return tuple(_rank(v) for v in value)


def key_document(spec: ShardingSpec, value: KeyValue) -> dict[str, Any]:
    return {f.field: v for f, v in zip(spec.key_fields, value, strict=True)}


def ranged(spec: ShardingSpec) -> bool:
    return not spec.any_hashed


def split_points(spec: ShardingSpec) -> tuple[KeyValue, ...]:
    """Every point a ranged key is split at (explicit or YCSB-even, and zone bounds), sorted."""
    if not ranged(spec):
        return ()
    points = [spec.value(p) for p in spec.split_points]
    if spec.initial_chunks and not spec.split_points and spec.key_fields[0].field == "_id":
        ycsb = ycsb_split_points(
            spec.initial_chunks, hashed=spec.ycsb_hashed_keys, records=spec.ycsb_records
        )
        points.extend(spec.value(p) for p in ycsb)
    for zone in spec.zones:
        points.extend((spec.value(zone.min), spec.value(zone.max)))
    lowest, highest = spec.value(Bound.MIN), (Bound.MAX,) * len(spec.key_fields)
    unique = {order(p): p for p in points if p not in (lowest, highest)}
    return tuple(unique[k] for k in sorted(unique))


def presplits_hashed_zones(spec: ShardingSpec) -> bool:
    """A hashed key with zones: shardCollection pre-splits the zone ranges itself
    (``presplitHashedZones``), once the zones exist."""
    return spec.any_hashed and bool(spec.zones)


def shard_collection_command(spec: ShardingSpec) -> dict[str, Any]:
    cmd: dict[str, Any] = {"shardCollection": spec.namespace, "key": spec.key_doc}
    if presplits_hashed_zones(spec):
        # The zones decide the initial chunks; numInitialChunks is not given with it.
        cmd["presplitHashedZones"] = True
    elif spec.initial_chunks and spec.key_fields[0].hashed:
        cmd["numInitialChunks"] = spec.initial_chunks
    return cmd


def zone_bound(spec: ShardingSpec, value: KeyValue) -> dict[str, Any]:
    """A zone bound as the server takes it: a hashed field's value is a 64-bit hash, which
    must travel as NumberLong (the driver sends a small int as int32, which MongoDB refuses
    for a hashed field: InvalidOptions)."""
    doc = key_document(spec, value)
    for f in spec.key_fields:
        if f.hashed and isinstance(doc[f.field], int) and not isinstance(doc[f.field], bool):
            doc[f.field] = driver.Int64(doc[f.field])
    return doc


def zone_commands(spec: ShardingSpec) -> list[dict[str, Any]]:
    """addShardToZone for every (shard, zone), then updateZoneKeyRange per zone (idempotent)."""
    cmds: list[dict[str, Any]] = []
    for zone in spec.zones:
        cmds.extend({"addShardToZone": shard, "zone": zone.name} for shard in zone.shards)
    for zone in spec.zones:
        cmds.append(
            {
                "updateZoneKeyRange": spec.namespace,
                "min": zone_bound(spec, spec.value(zone.min)),
                "max": zone_bound(spec, spec.value(zone.max)),
                "zone": zone.name,
            }
        )
    return cmds


# --- what MongoDB refuses or ignores, told before any command ---------------------------------


def sharding_problem(spec: ShardingSpec, version: str | None) -> str | None:
    """Why MongoDB (binaries of ``version``, when known) would refuse or silently ignore this
    layout; None when it takes it. One line, for the run's condition and Event."""
    return (
        _hashed_value_problem(spec)
        or _presplit_zones_problem(spec)
        or _initial_chunks_problem(spec, version)
    )


def _hashed_value_problem(spec: ShardingSpec) -> str | None:
    """A hashed field's zone bound must be NumberLong, MinKey or MaxKey: never a string."""
    for zone in spec.zones:
        for bound in (spec.value(zone.min), spec.value(zone.max)):
            for f, v in zip(spec.key_fields, bound, strict=True):
                if f.hashed and isinstance(v, str):
                    return (
                        f"sharding.zones {zone.name}: the hashed field {f.field} takes 64-bit "
                        f"hash values (integers), not {v!r} (MongoDB: InvalidOptions)"
                    )
    return None


def _presplit_zones_problem(spec: ShardingSpec) -> str | None:
    """presplitHashedZones' rules (MongoDB's initial_split_policy.cpp, errors 31388-31412)."""
    if not presplits_hashed_zones(spec):
        return None
    fields = spec.key_fields
    at = next(i for i, f in enumerate(fields) if f.hashed)
    hashed = fields[at].field
    if at == 0:
        whole = len(spec.zones) == 1 and (
            spec.value(spec.zones[0].min) == (Bound.MIN,) * len(fields)
            and spec.value(spec.zones[0].max) == (Bound.MAX,) * len(fields)
        )
        if whole:
            return None
        return (
            f"sharding.zones: with the hashed field {hashed} first, MongoDB pre-splits zones "
            "only as one zone over the whole key (min and max left out) (error 31412)"
        )
    before = ", ".join(f.field for f in fields[:at])
    for zone in spec.zones:
        low, high = spec.value(zone.min), spec.value(zone.max)
        if any(isinstance(v, Bound) for v in low[:at]):
            why = f"min must give every field before the hashed field {hashed} ({before}) (31388)"
        elif order(low[:at]) == order(high[:at]):
            why = f"max must differ from min in a field before the hashed field {hashed} (31390)"
        elif any(v is not Bound.MIN for v in low[at:]):
            why = f"min may not give the hashed field {hashed} or a field after it (31389/31391)"
        else:
            continue
        return f"sharding.zones {zone.name}: {why}"
    return None


def _initial_chunks_problem(spec: ShardingSpec, version: str | None) -> str | None:
    """numInitialChunks for a hashed first field is ignored from 7.2 on (SERVER-74747): the
    server puts one chunk on each shard itself. Refused, not silently dropped."""
    if not spec.initial_chunks or not spec.key_fields[0].hashed or presplits_hashed_zones(spec):
        return None
    try:
        honoured = version is None or capabilities(version).num_initial_chunks
    except UnsupportedVersion:
        honoured = True  # not a release this operator runs: the server decides
    if honoured:
        return None
    return (
        f"sharding.preSplitChunks: MongoDB {series(version or '0.0')} ignores numInitialChunks "
        "for a hashed key (7.2 and later create one chunk per shard themselves): leave "
        "preSplitChunks out, or use a ranged _id key, which is split and moved explicitly"
    )


def split_commands(spec: ShardingSpec) -> list[dict[str, Any]]:
    return [{"split": spec.namespace, "middle": key_document(spec, p)} for p in split_points(spec)]


@dataclass(frozen=True)
class Chunk:
    """A chunk as config.chunks shows it: [min, max) on ``shard``."""

    min: KeyValue
    max: KeyValue
    shard: str


def _zone_of(spec: ShardingSpec, chunk: Chunk) -> tuple[str, ...] | None:
    for zone in spec.zones:
        lo, hi = order(spec.value(zone.min)), order(spec.value(zone.max))
        if lo <= order(chunk.min) and order(chunk.max) <= hi:
            return zone.shards
    return None


def placement(spec: ShardingSpec, chunks: Sequence[Chunk], shards: Sequence[str]) -> list[str]:
    """Where each chunk (sorted by min) should be: round-robin across all shards, or across its
    zone's shards for a chunk inside a zone."""
    turn: dict[tuple[str, ...], int] = {}
    wanted: list[str] = []
    for chunk in sorted(chunks, key=lambda c: order(c.min)):
        targets = _zone_of(spec, chunk) or tuple(shards)
        i = turn.get(targets, 0)
        turn[targets] = i + 1
        wanted.append(targets[i % len(targets)])
    return wanted


def move_command(spec: ShardingSpec, chunk: Chunk, to: str, *, move_range: bool) -> dict[str, Any]:
    """One chunk to shard ``to``: moveRange by its bounds where the routers have it (6.0+),
    else moveChunk by its bounds."""
    low, high = key_document(spec, chunk.min), key_document(spec, chunk.max)
    if move_range:
        return {"moveRange": spec.namespace, "min": low, "max": high, "toShard": to}
    return {"moveChunk": spec.namespace, "bounds": [low, high], "to": to}


def move_commands(
    spec: ShardingSpec, chunks: Sequence[Chunk], shards: Sequence[str], *, move_range: bool = False
) -> list[dict[str, Any]]:
    """A move for every chunk not yet where ``placement`` wants it (none on a re-run)."""
    if not shards or not split_points(spec):  # hashed keys, or one chunk: the balancer's
        return []
    ordered = sorted(chunks, key=lambda c: order(c.min))
    return [
        move_command(spec, chunk, target, move_range=move_range)
        for chunk, target in zip(ordered, placement(spec, ordered, shards), strict=True)
        if chunk.shard != target
    ]


def chunks_from(spec: ShardingSpec, docs: Sequence[Mapping[str, Any]]) -> list[Chunk]:
    """config.chunks documents (bounds already read into Bound values) as Chunks."""
    fields = [f.field for f in spec.key_fields]
    return [
        Chunk(
            tuple(d["min"].get(f, Bound.MIN) for f in fields),
            tuple(d["max"].get(f, Bound.MAX) for f in fields),
            str(d["shard"]),
        )
        for d in docs
    ]
