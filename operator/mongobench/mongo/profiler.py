"""The profiler's slow operations and a collection's disk use, planned without I/O.

The commands sent (admin.py sends them) and what is kept of the replies, checked against
MongoDB's source (e2e/local/README.md lists the files):

- ``{profile: <level>, slowms: <ms>}`` on the run's database (db/commands/profile.idl: the
  level is the command's value, ``slowms`` a safeInt64). It answers the settings as they were
  (``was``, ``slowms``): ``slowms`` is the server's global threshold (also the slow-query log's),
  so the operator puts it back as it found it. Levels 1 and 2 are refused by mongos
  (s/commands/cluster_profile_cmd.cpp, BadValue "Profiling is not permitted on mongoS"): a
  router has no system.profile, so a sharded cluster is profiled on each shard's primary.
- a ``find`` on ``<db>.system.profile`` for the step's window, slowest first. An entry's
  ``command`` holds the operation's values (user data): only its shape is kept, the keys with
  every value as ``?`` (the collection named by the command's first key stays), next to the
  server's own shape hash (``planCacheShapeHash`` from 8.0, ``queryHash`` before).
- ``$collStats: {storageStats: {}}``: one document per shard through mongos (with ``shard``),
  one from a replica set's primary; ``storageStats`` {count, size, storageSize, totalIndexSize}.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from mongobench.mongo.model import CollectionDiskUse, DiskShare, SlowOperation

OFF, SLOW_ONLY = 0, 1  # profiler levels: 1 records operations slower than slowms
TOP_MAX = 100  # spec.profiler.top's maximum (the CRD's too): status stays bounded
SHAPE_CHARS = 200  # a shape longer than this is cut (an insert of many fields)
_ARRAY_SHAPES = 3  # distinct element shapes kept of an array (updates: [{q, u}, ...])
# Fields of a command that say how it was sent, not what it asked: left out of its shape.
_ENVELOPE = frozenset(
    {
        "lsid",
        "txnNumber",
        "autocommit",
        "startTransaction",
        "stmtId",
        "comment",
        "maxTimeMS",
        "shardVersion",
        "databaseVersion",
        "clientOperationKey",
        "mayBypassWriteBlocking",
    }
)
PROFILE_FIELDS = (
    "op",
    "ns",
    "command",
    "millis",
    "planSummary",
    "docsExamined",
    "keysExamined",
    "nreturned",
    "queryHash",
    "planCacheShapeHash",
    "ts",
)


def profile_command(level: int, slow_ms: int | None = None) -> dict[str, Any]:
    """The profile command: level 1 with the run's slowms, level 0 with the slowms found."""
    cmd: dict[str, Any] = {"profile": level}
    if slow_ms is not None:
        cmd["slowms"] = slow_ms
    return cmd


def slow_operations_find(
    database: str, since: datetime, until: datetime | None, top: int
) -> dict[str, Any]:
    """The step's `top` slowest entries of system.profile (its own reads left out)."""
    window: dict[str, Any] = {"$gte": since, **({} if until is None else {"$lte": until})}
    return {
        "find": "system.profile",
        "filter": {"ts": window, "ns": {"$ne": f"{database}.system.profile"}},
        "sort": {"millis": -1},
        "limit": top,
        "projection": dict.fromkeys(PROFILE_FIELDS, 1),
    }


def _shape(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _shape(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        shapes: list[Any] = []
        for item in value:
            shaped = _shape(item)
            if shaped not in shapes:
                shapes.append(shaped)
        return shapes[:_ARRAY_SHAPES]
    return "?"


def _text(shape: Any) -> str:
    if isinstance(shape, dict):
        return "{" + ", ".join(f"{k}: {_text(v)}" for k, v in shape.items()) + "}"
    if isinstance(shape, list):
        return "[" + ", ".join(_text(v) for v in shape) + "]"
    return str(shape)


def command_shape(command: Mapping[str, Any]) -> str:
    """`find usertable {filter: {_id: ?}, limit: ?}`: the command's name and collection, then
    its keys with every value replaced by ? (an update's entry is its statement: `{q: {_id: ?},
    u: {$set: {field1: ?}}}`); what says how it was sent ($db, lsid, ...) is left out. At most
    SHAPE_CHARS characters."""
    items = [(str(k), v) for k, v in command.items()]
    head = ""
    if items and isinstance(items[0][1], str):  # `find: usertable`; an update's {q, u} has none
        (name, target), items = items[0], items[1:]
        head = f"{name} {target}"
    body = {k: _shape(v) for k, v in items if not k.startswith("$") and k not in _ENVELOPE}
    return _cut(" ".join(part for part in (head, _text(body) if body else "") if part))


def _cut(text: str) -> str:
    """At most SHAPE_CHARS characters (a shape or plan summary of many fields): status stays
    bounded."""
    return text if len(text) <= SHAPE_CHARS else text[: SHAPE_CHARS - 1] + "…"


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def slow_operation(entry: Mapping[str, Any], shard: str | None) -> SlowOperation:
    """A system.profile entry as kept: values dropped (command_shape), counters as integers."""
    command = entry.get("command")
    hashed = entry.get("planCacheShapeHash") or entry.get("queryHash")
    return SlowOperation(
        op=str(entry.get("op", "")),
        ns=str(entry.get("ns", "")),
        shape=command_shape(command) if isinstance(command, Mapping) else "",
        millis=_int(entry.get("millis")) or 0,
        plan_summary=_cut(str(entry["planSummary"])) if entry.get("planSummary") else None,
        docs_examined=_int(entry.get("docsExamined")),
        keys_examined=_int(entry.get("keysExamined")),
        nreturned=_int(entry.get("nreturned")),
        shard=shard,
        query_hash=str(hashed) if hashed else None,
    )


def slowest(operations: Iterable[SlowOperation], top: int) -> tuple[SlowOperation, ...]:
    """The `top` slowest across the shards, slowest first (ties: by shard, then namespace)."""
    ordered = sorted(operations, key=lambda o: (-o.millis, o.shard or "", o.ns, o.shape))
    return tuple(ordered[:top])


def collstats_pipeline() -> list[dict[str, Any]]:
    return [{"$collStats": {"storageStats": {}}}]


def disk_use(namespace: str, docs: Sequence[Mapping[str, Any]]) -> CollectionDiskUse:
    """$collStats' documents as the collection's disk use: per shard (when the documents name
    one, i.e. through mongos) and its total."""
    shares: dict[str | None, DiskShare] = {}
    for doc in docs:
        stats = doc.get("storageStats") or {}
        shard = str(doc["shard"]) if doc.get("shard") is not None else None
        before = shares.get(shard) or DiskShare(shard, 0, 0, 0, 0)
        shares[shard] = DiskShare(
            shard,
            before.documents + (_int(stats.get("count")) or 0),
            before.data_bytes + (_int(stats.get("size")) or 0),
            before.storage_bytes + (_int(stats.get("storageSize")) or 0),
            before.index_bytes + (_int(stats.get("totalIndexSize")) or 0),
        )
    ordered = sorted(shares.values(), key=lambda s: s.shard or "")
    return CollectionDiskUse(namespace, tuple(ordered))
