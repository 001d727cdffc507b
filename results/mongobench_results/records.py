"""Pure views of a BenchmarkRun object (live from the API or `run.json` of an archive).

Reads the status the operator writes (its orchestration and CPU figures, and the step results
of summary.py) and the issue-10 additions when present (result `window`, `perClient`, `littlesLaw`
with a diagnosis); older runs without them fall back to the fields they have.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from mongobench_results import validity as _validity

TERMINAL = ("Succeeded", "Failed")

# Spec fields that change what a workload measures: two runs that differ in any of them are
# not comparable. The target's shape (shards, members, version, platform) is what users compare,
# so it is not here; neither are labels, names, images or cleanup policies.
# What defines the work a workload measures: runs that differ here are not comparable. Where the
# data lives (database, collection) is not part of it, and neither is how much concurrency the
# clients bring (CONCURRENCY_PARAMETERS): that is a dimension users compare on purpose.
RUN_PARAMETERS = (
    ("driver",),
    ("load", "recordCount"),
    ("load", "batchSize"),
    ("load", "insertOrder"),
    ("load", "skip"),
    ("run", "operationCount"),
    ("run", "durationSeconds"),
    ("run", "targetOpsPerSecond"),
    ("run", "requestDistribution"),
    ("run", "fieldCount"),
    ("run", "fieldLength"),
    ("run", "properties"),
    ("warmup",),
    ("mongo", "writeConcern"),
    ("mongo", "readPreference"),
    ("mongo", "upsert"),
    ("dataReset", "between"),
    ("dataReset", "insertingWorkloads"),
    ("sharding",),
    ("profiler",),  # the profiler writes a document per slow operation: it costs throughput
)
LOAD_PARAMETERS = (
    ("driver",),
    ("load", "recordCount"),
    ("load", "batchSize"),
    ("load", "insertOrder"),
    ("load", "properties"),
    ("load", "scenario"),
    ("run", "fieldCount"),
    ("run", "fieldLength"),
    ("mongo", "writeConcern"),
    ("mongo", "upsert"),
    ("sharding",),
)
CONCURRENCY_PARAMETERS = (("clients", "parallelism"), ("run", "threads"), ("load", "threads"))
# What the CRD defaults these to, so a run written before a default existed compares equal.
_DEFAULTS: dict[str, Any] = {
    "driver": "ycsb",
    "database": "ycsb",
    "collection": "usertable",
    "load.recordCount": 100000,
    "load.batchSize": 1,
    "load.insertOrder": "hashed",
    "load.skip": False,
    "load.threads": 16,
    "run.threads": 16,
    "run.fieldCount": 10,
    "run.fieldLength": 100,
    "mongo.writeConcern": "acknowledged",
    "mongo.readPreference": "primary",
    "mongo.upsert": False,
    "clients.parallelism": 1,
    "dataReset.between": "None",
    "dataReset.insertingWorkloads": "RunLast",
}


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        t = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _dig(obj: Mapping[str, Any] | None, *path: str) -> Any:
    cur: Any = obj
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


@dataclass(frozen=True)
class Shape:
    """What the target looked like when the run started (status.clusterSnapshot)."""

    kind: str  # ReplicaSet, Sharded, Standalone or External
    members: int | None = None  # per replica set (members per shard when sharded)
    shards: int | None = None
    mongos: int | None = None
    config_servers: int | None = None
    version: str | None = None
    platform: str | None = None
    instance_types: tuple[str, ...] = ()
    cluster: str | None = None

    def text(self) -> str:
        if self.kind == "External":
            return "external URI"
        if self.kind == "Sharded":
            return f"{self.shards} shards x {self.members}, {self.mongos} mongos"
        if self.kind == "ReplicaSet":
            return f"replica set x {self.members}"
        if self.kind == "Standalone":
            return "standalone mongod"
        return self.kind

    def dimensions(self) -> dict[str, Any]:
        """The dimensions a scaling plot can use."""
        return {
            "topology": self.kind,
            "shards": self.shards,
            "members": self.members,
            "mongos": self.mongos,
            "configServers": self.config_servers,
            "version": self.version,
            "platform": self.platform,
            "instanceTypes": ",".join(self.instance_types) or None,
        }


def shape(run: Mapping[str, Any]) -> Shape:
    snap = _dig(run, "status", "clusterSnapshot") or {}
    if not snap:
        external = _dig(run, "spec", "uriSecretRef") is not None
        return Shape("External" if external else "unknown")
    if snap.get("external"):
        return Shape("External")
    topo = snap.get("topology") or {}
    platform = snap.get("platform") or {}
    instance_types = tuple(
        sorted(
            {str(t) for t in platform.get("instanceTypes") or []}
            | {str(n["instanceType"]) for n in snap.get("nodes") or [] if n.get("instanceType")}
        )
    )
    version, provider, cluster = snap.get("version"), platform.get("provider"), snap.get("name")
    if topo.get("type") == "Sharded" or (topo.get("sharded") and not topo.get("replicaSet")):
        sh = topo.get("sharded") or {}
        return Shape(
            "Sharded",
            members=sh.get("membersPerShard", 3),
            shards=sh.get("shards"),
            mongos=sh.get("mongos", 2),
            config_servers=sh.get("configServers", 3),
            version=version,
            platform=provider,
            instance_types=instance_types,
            cluster=cluster,
        )
    standalone = topo.get("type") == "Standalone"
    return Shape(
        "Standalone" if standalone else "ReplicaSet",
        members=1 if standalone else (topo.get("replicaSet") or {}).get("members", 3),
        version=version,
        platform=provider,
        instance_types=instance_types,
        cluster=cluster,
    )


@dataclass(frozen=True)
class StepView:
    index: int
    kind: str
    label: str
    workload: str | None
    repetition: int | None
    phase: str
    result: Mapping[str, Any] | None
    cpu: Mapping[str, Any] | None
    start: datetime | None
    end: datetime | None
    message: str | None
    resources: Mapping[str, Any] | None = None  # disk, network, memory (resource profile)
    validity: _validity.Validity = _validity.UNJUDGED  # the operator's verdict on this trial
    distribution: Mapping[str, Any] | None = None  # shards after a load (sharded clusters)
    roles: Mapping[str, Any] | None = None  # CPU and memory per role (mongod, mongos, ...)
    cost: Mapping[str, Any] | None = None  # node-hours and price (cost.py), when prices are given
    # spec.profiler: {slowMs, operations [{op, ns, shape, millis, ...}]} (bounded: slow_operations)
    slow_operations: Mapping[str, Any] | None = None
    disk_use: Mapping[str, Any] | None = None  # {collections [...]} after load and measured steps

    @property
    def seconds(self) -> float | None:
        if self.start and self.end:
            return (self.end - self.start).total_seconds()
        return None


def steps(run: Mapping[str, Any]) -> list[StepView]:
    out: list[StepView] = []
    for s in _dig(run, "status", "steps") or []:
        out.append(
            StepView(
                index=int(s.get("index", len(out))),
                kind=str(s.get("kind", "")),
                label=str(s.get("label", "")),
                workload=s.get("workload"),
                repetition=s.get("repetition"),
                phase=str(s.get("phase", "Pending")),
                result=s.get("result"),
                cpu=s.get("cpu"),
                start=parse_time(s.get("startTime")),
                end=parse_time(s.get("completionTime")),
                message=s.get("message"),
                resources=s.get("resources"),
                validity=_validity.parse(s.get("validity")),
                distribution=s.get("distribution"),
                roles=s.get("roles"),
                cost=s.get("cost"),
                slow_operations=s.get("slowOperations"),
                disk_use=s.get("diskUse"),
            )
        )
    return out


# A step's slow operations as read back: never more than the operator keeps (spec.profiler.top's
# maximum), a shape cut where the operator cuts it. Runs from before spec.profiler have none.
SLOW_OPERATIONS_MAX = 100
SHAPE_CHARS = 200


@dataclass(frozen=True)
class SlowOp:
    step: str
    workload: str | None
    op: str
    ns: str
    shape: str
    millis: int
    plan_summary: str | None
    docs_examined: int | None
    keys_examined: int | None
    nreturned: int | None
    shard: str | None
    query_hash: str | None


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def slow_operations(run: Mapping[str, Any]) -> list[SlowOp]:
    """Every profiled step's slowest operations, in step order, slowest first within a step."""
    out: list[SlowOp] = []
    for s in steps(run):
        found = (s.slow_operations or {}).get("operations")
        if not isinstance(found, list):
            continue
        for o in found[:SLOW_OPERATIONS_MAX]:
            if not isinstance(o, Mapping):
                continue
            out.append(
                SlowOp(
                    step=s.label,
                    workload=s.workload,
                    op=str(o.get("op", "")),
                    ns=str(o.get("ns", "")),
                    shape=str(o.get("shape", ""))[:SHAPE_CHARS],
                    millis=_count(o.get("millis")) or 0,
                    plan_summary=str(o["planSummary"])[:SHAPE_CHARS]
                    if o.get("planSummary")
                    else None,
                    docs_examined=_count(o.get("docsExamined")),
                    keys_examined=_count(o.get("keysExamined")),
                    nreturned=_count(o.get("nreturned")),
                    shard=o.get("shard"),
                    query_hash=o.get("queryHash"),
                )
            )
    return out


@dataclass(frozen=True)
class DiskUse:
    step: str
    collection: str
    shard: str | None  # None: the collection's total
    documents: int
    data_bytes: int
    storage_bytes: int
    index_bytes: int


def _disk_row(step: str, collection: str, shard: str | None, d: Mapping[str, Any]) -> DiskUse:
    return DiskUse(
        step,
        collection,
        shard,
        _count(d.get("documents")) or 0,
        _count(d.get("dataBytes")) or 0,
        _count(d.get("storageBytes")) or 0,
        _count(d.get("indexBytes")) or 0,
    )


def step_summary(step: StepView) -> dict[str, int | None]:
    """A step's slow operations and disk use in a few figures (export's steps.csv): how many
    operations were kept and the slowest, and the collections' totals."""
    ops = (step.slow_operations or {}).get("operations")
    millis = [_count(o.get("millis")) or 0 for o in ops or [] if isinstance(o, Mapping)]
    listed = (step.disk_use or {}).get("collections") or []
    collections = [c for c in listed if isinstance(c, Mapping)]

    def total(key: str) -> int | None:
        return sum(_count(c.get(key)) or 0 for c in collections) if collections else None

    return {
        "slowOperations": len(millis) if isinstance(ops, list) else None,
        "slowestMs": max(millis) if millis else None,
        "diskDocuments": total("documents"),
        "diskDataBytes": total("dataBytes"),
        "diskStorageBytes": total("storageBytes"),
        "diskIndexBytes": total("indexBytes"),
    }


def disk_use(run: Mapping[str, Any], *, last_only: bool = False) -> list[DiskUse]:
    """The disk use per collection after each step that measured it (or the last such step):
    each collection's total, then its shards."""
    measured = [s for s in steps(run) if isinstance((s.disk_use or {}).get("collections"), list)]
    if last_only:
        measured = measured[-1:]
    out: list[DiskUse] = []
    for s in measured:
        for c in (s.disk_use or {})["collections"]:
            if not isinstance(c, Mapping):
                continue
            name = str(c.get("collection", ""))
            out.append(_disk_row(s.label, name, None, c))
            out.extend(
                _disk_row(s.label, name, str(sh.get("shard")), sh)
                for sh in c.get("shards") or []
                if isinstance(sh, Mapping)
            )
    return out


def shard_key(run: Mapping[str, Any]) -> str:
    """The run's shard key as MongoDB writes it: ``{_id: hashed}``, ``{field0: 1, _id: 1}``."""
    sharding = _dig(run, "spec", "sharding") or {}
    fields = sharding.get("fields") or [
        {
            "field": sharding.get("key", "_id"),
            "type": "Hashed" if sharding.get("hashed", True) else "Ranged",
        }
    ]
    parts = (f"{f['field']}: {'hashed' if f.get('type') == 'Hashed' else 1}" for f in fields)
    return "{" + ", ".join(parts) + "}"


def distribution(run: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The shard distribution measured after the run's last (re)load: documents, data size and
    chunks per shard; None for a replica set or before the first load."""
    loaded = [s.distribution for s in steps(run) if s.distribution]
    return loaded[-1] if loaded else None


def measured(run: Mapping[str, Any]) -> list[StepView]:
    """The measured repetitions: run steps that succeeded with a result."""
    return [s for s in steps(run) if s.kind == "run" and s.phase == "Succeeded" and s.result]


# The workload name a load is a result under: in summaries, `mongobench compare` and reports.
LOAD = "load"


def loads(run: Mapping[str, Any]) -> list[StepView]:
    """The measured loads: every load step (the first, load.repetitions, and reloads from empty
    that dataReset asks for) that succeeded with a result, as workload `load`."""
    return [
        replace(s, workload=LOAD, repetition=n)
        for n, s in enumerate(
            (s for s in steps(run) if s.kind == "load" and s.phase == "Succeeded" and s.result),
            start=1,
        )
    ]


def results(run: Mapping[str, Any]) -> list[StepView]:
    """Everything measured: the loads (workload `load`), then the run phase's repetitions."""
    return [*loads(run), *measured(run)]


def step_seconds(result: Mapping[str, Any]) -> float | None:
    """A step's seconds: the clients' window (first operation's start to last one's end), else
    the step's runtime. A load's time to load; a workload's run time, and for one operation
    from one thread that operation's own."""
    seconds = window_seconds(result) or result.get("runtimeSeconds")
    return float(seconds) if seconds else None


def window_seconds(result: Mapping[str, Any]) -> float | None:
    seconds = _dig(result, "window", "seconds")
    return float(seconds) if seconds else None


def throughput(result: Mapping[str, Any]) -> float | None:
    """Operations per second of a step: operationsTotal over the clients' measured window
    (first to last operation) when the result has one, else the merged throughput."""
    seconds = window_seconds(result)
    total = result.get("operationsTotal")
    if seconds and total is not None:
        return float(total) / seconds
    value = result.get("throughput")
    return float(value) if value is not None else None


def latency(result: Mapping[str, Any], operation: str, stat: str) -> float | None:
    value = _dig(result, "operations", operation, stat)
    return float(value) if value is not None else None


def cpu_group(step: StepView, group: str) -> float | None:
    """Average busy % of the step's database ("cluster") or client ("clients") nodes."""
    value = _dig(step.cpu, group, "avg")
    return float(value) if value is not None else None


# Roles of a step's status.roles, as the operator names them.
ROLES = ("mongod", "configServer", "mongos", "clients")


def role_figure(step: StepView, role: str, figure: str) -> float | None:
    """A role's figure summed over its pods: ``cpuCores`` (mean cores) or
    ``memoryWorkingSetBytes``; None where the role or its series are missing."""
    value = _dig(step.roles, role, "sum", figure)
    return float(value) if value is not None else None


def cpu_busy_series(
    modes: Mapping[str, Sequence[Sequence[float]]],
) -> list[tuple[float, float]]:
    """One node's per-mode CPU rates ({mode: [[t, cpu-seconds/s], ...]}, as the archive keeps
    them in resources.json `cpuSeries`) as [(t, busy % of all its CPUs)]: at each point 100 x
    (all modes - idle) / all modes, the definition the operator's step figures use."""
    idle = {float(t): float(v) for t, v in modes.get("idle", ())}
    totals: dict[float, float] = {}
    for points in modes.values():
        for t, v in points:
            totals[float(t)] = totals.get(float(t), 0.0) + float(v)
    return [
        (t, 100 * max(0.0, totals[t] - idle[t]) / totals[t])
        for t in sorted(idle)
        if totals.get(t, 0) > 0
    ]


DATABASE_ROLES = ("cluster", "both")  # a step's cpu.nodes roles that carry the database


def database_nodes(step: StepView) -> list[str]:
    """The nodes of a step's CPU figures that ran the database (a client node is not one)."""
    return [
        str(n["name"])
        for n in (step.cpu or {}).get("nodes") or []
        if n.get("role") in DATABASE_ROLES
    ]


def node_average(series: Mapping[str, Sequence[tuple[float, float]]]) -> list[tuple[float, float]]:
    """Per-node busy % series ({node: [(t, busy)]}) as one: at each sample time, the mean over
    the nodes with a sample then (the active ones), as the studies averaged dstat's nodes."""
    at: dict[float, list[float]] = {}
    for points in series.values():
        for t, busy in points:
            at.setdefault(t, []).append(busy)
    return [(t, sum(v) / len(v)) for t, v in sorted(at.items())]


def mean_trace(traces: Sequence[Sequence[tuple[float, float]]]) -> list[tuple[float, float]]:
    """Several trials' series (t in seconds since each trial's start) as their mean at each
    whole second, where any trial has a sample."""
    at: dict[float, list[float]] = {}
    for points in traces:
        for t, v in points:
            at.setdefault(float(round(t)), []).append(v)
    return [(t, sum(v) / len(v)) for t, v in sorted(at.items())]


def littles_law(result: Mapping[str, Any]) -> Mapping[str, Any]:
    return result.get("littlesLaw") or {}


def concurrency(run: Mapping[str, Any]) -> dict[str, Any]:
    """Flat {'clients.parallelism': 2, 'run.threads': 4, ...}: the clients' concurrency."""
    spec = run.get("spec") or {}
    out: dict[str, Any] = {}
    for path in CONCURRENCY_PARAMETERS:
        key = ".".join(path)
        value = _dig(spec, *path)
        out[key] = value if value is not None else _DEFAULTS.get(key)
    return out


def workload_parameters(run: Mapping[str, Any], workload: str) -> dict[str, Any]:
    """Flat {'run.threads': 16, ...} of everything that defines what `workload` measures (for
    the load: the load's own fields, the record's size, and how it is written)."""
    spec = run.get("spec") or {}
    out: dict[str, Any] = {}
    for path in LOAD_PARAMETERS if workload == LOAD else RUN_PARAMETERS:
        key = ".".join(path)
        value = _dig(spec, *path)
        if value is None:
            value = _DEFAULTS.get(key)
        if value is not None:
            out[key] = value
    for w in spec.get("workloads") or []:
        if w.get("name") == workload:
            out["workload.base"] = w.get("base")
            out["workload.properties"] = w.get("properties") or None
    return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True)
class Overview:
    """One line of `mongobench list`."""

    namespace: str
    name: str
    uid: str
    origin: str
    phase: str
    progress: str
    percent: int | None
    current: str
    target: str
    topology: str
    version: str
    platform: str
    labels: Mapping[str, str] = field(default_factory=dict)
    started: datetime | None = None
    finished: datetime | None = None

    def duration(self, now: datetime | None = None) -> float | None:
        if self.started is None:
            return None
        end = self.finished or (now if self.phase not in TERMINAL else None)
        return (end - self.started).total_seconds() if end else None


def overview(run: Mapping[str, Any], origin: str = "") -> Overview:
    meta = run.get("metadata") or {}
    spec = run.get("spec") or {}
    status = run.get("status") or {}
    progress = status.get("progress") or {}
    sh = shape(run)
    cluster = _dig(spec, "clusterRef", "name")
    target = f"MongoCluster {cluster}" if cluster else "external URI"
    return Overview(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        origin=origin,
        phase=str(status.get("phase") or "Pending"),
        progress=str(progress.get("summary") or "-"),
        percent=progress.get("percent"),
        current=str(progress.get("current") or ""),
        target=target,
        topology=sh.text() if sh.kind != "unknown" else "-",
        version=str(sh.version or "-"),
        platform=str(sh.platform or "-"),
        labels=dict(spec.get("labels") or {}),
        started=parse_time(status.get("startTime")),
        finished=parse_time(status.get("completionTime")),
    )


def conditions(run: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(_dig(run, "status", "conditions") or [])


def warnings(run: Mapping[str, Any]) -> list[str]:
    """What a reader of the results must know: failed steps, missing CPU, Little's law."""
    out: list[str] = []
    for c in conditions(run):
        if c.get("type") == "CPUCollected" and c.get("status") != "True":
            out.append(f"CPU missing: {c.get('reason')}: {c.get('message')}")
    for s in steps(run):
        if s.phase == "Failed":
            out.append(f"step {s.label} failed: {s.message or 'no message'}")
        if s.kind == "run" and s.phase == "Succeeded" and s.cpu is None:
            out.append(f"step {s.label}: no CPU figures")
        if s.result:
            ll = littles_law(s.result)
            if ll.get("ok") is False:
                why = ll.get("diagnosis") or "throughput x latency does not match the threads"
                out.append(f"step {s.label}: Little's law ratio {ll.get('ratio')}: {why}")
            out.extend(f"step {s.label}: {w}" for w in s.result.get("warnings") or [])
    return out


def warning_groups(found: Sequence[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """(run, warning) pairs grouped by kind: the warning without its step and with its
    figures as "…" ("short run (… s): ..."), each with where it was seen ("run: step ...")."""
    groups: dict[str, list[str]] = {}
    for run, text in found:
        what = re.sub(r"^step [^:]*: ", "", text)
        kind = re.sub(r"\d+(\.\d+)?", "…", what)
        groups.setdefault(kind, []).append(f"{run}: {text}")
    return list(groups.items())


def workloads(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for run in runs:
        for s in results(run):
            if s.workload:
                seen.setdefault(str(s.workload), None)
    return list(seen)
