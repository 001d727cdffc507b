"""Pure planning of a sharded collection's layout: the commands that shard it, zone it, split
it and move its chunks. No I/O: admin.py sends what these return, reading back only where the
chunks are (config.chunks) to decide the moves.

What is supported:
- a hashed key (one field or a compound key with one hashed field): ``shardCollection`` with
  ``numInitialChunks`` when the hashed field comes first; the balancer spreads them;
- a ranged key: ``split`` at explicit points, or at points spread evenly over YCSB's key names
  (``user<number>``, compared as strings: ``user1...`` to ``user9...``) when the first field is
  ``_id``; then the chunks are moved round-robin across the shards with ``moveChunk`` (by exact
  bounds; accepted by every server from 4.4 to 8.0, where ``moveRange`` also exists), each chunk
  inside a zone round-robin across that zone's shards;
- zones: ``addShardToZone`` per shard, ``updateZoneKeyRange`` per range; zone bounds are split
  points too, so no chunk straddles a zone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from mongobench.mongo.model import Bound, KeyValue, ShardingSpec

# YCSB's key names are "user" + a decimal number (hashed insert order: a 64-bit FNV hash, mostly
# 19 digits; ordered: 0..n-1). Compared as strings, their first digits 1-9 are filled about
# evenly, so points spread over [0.1, 1.0) as decimal fractions split them about evenly.
YCSB_PREFIX = "user"


def ycsb_split_points(chunks: int) -> tuple[str, ...]:
    """``chunks - 1`` key names splitting YCSB's key space into ``chunks`` near-even ranges."""
    if chunks <= 1:
        return ()
    digits = len(str(chunks)) + 1
    points: list[str] = []
    for k in range(1, chunks):
        fraction = Fraction(1, 10) + Fraction(9, 10) * Fraction(k, chunks)
        scaled = int(fraction * 10**digits)
        text = str(scaled).rjust(digits, "0").rstrip("0")
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
        points.extend(spec.value(p) for p in ycsb_split_points(spec.initial_chunks))
    for zone in spec.zones:
        points.extend((spec.value(zone.min), spec.value(zone.max)))
    lowest, highest = spec.value(Bound.MIN), (Bound.MAX,) * len(spec.key_fields)
    unique = {order(p): p for p in points if p not in (lowest, highest)}
    return tuple(unique[k] for k in sorted(unique))


def shard_collection_command(spec: ShardingSpec) -> dict[str, Any]:
    cmd: dict[str, Any] = {"shardCollection": spec.namespace, "key": spec.key_doc}
    if spec.initial_chunks and spec.key_fields[0].hashed:
        cmd["numInitialChunks"] = spec.initial_chunks
    return cmd


def zone_commands(spec: ShardingSpec) -> list[dict[str, Any]]:
    """addShardToZone for every (shard, zone), then updateZoneKeyRange per zone (idempotent)."""
    cmds: list[dict[str, Any]] = []
    for zone in spec.zones:
        cmds.extend({"addShardToZone": shard, "zone": zone.name} for shard in zone.shards)
    for zone in spec.zones:
        cmds.append(
            {
                "updateZoneKeyRange": spec.namespace,
                "min": key_document(spec, spec.value(zone.min)),
                "max": key_document(spec, spec.value(zone.max)),
                "zone": zone.name,
            }
        )
    return cmds


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


def move_commands(
    spec: ShardingSpec, chunks: Sequence[Chunk], shards: Sequence[str]
) -> list[dict[str, Any]]:
    """moveChunk for every chunk not yet where ``placement`` wants it (none on a re-run)."""
    if not shards or not split_points(spec):  # hashed keys, or one chunk: the balancer's
        return []
    ordered = sorted(chunks, key=lambda c: order(c.min))
    return [
        {
            "moveChunk": spec.namespace,
            "bounds": [key_document(spec, chunk.min), key_document(spec, chunk.max)],
            "to": target,
        }
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
