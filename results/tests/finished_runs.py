"""Test-only builders of finished BenchmarkRuns (an in-memory stand-in for a cluster's runs).

The documents are made by the library's own document builder (mongobench_results.document) with
real HDR histograms, and the step results in status by the code the operator writes status with
(mongobench_results.merge, summary.step_result, summary.summarise), so readers of runs (compare,
the CLI) read what the operator really writes. Only the numbers are drawn (seeded): throughput
per repetition from a normal distribution, latencies so that Little's law holds (mean latency =
threads / throughput). The CLI's tests wrap these runs as its LoadedRun (cli/tests/builders.py).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from mongobench_results import hdr, summary, validity
from mongobench_results.document import OpResult, Window, build_document
from mongobench_results.merge import merge_documents

MIXES = {  # operation shares of YCSB's standard workloads
    "a": {"READ": 0.5, "UPDATE": 0.5},
    "b": {"READ": 0.95, "UPDATE": 0.05},
    "c": {"READ": 1.0},
    "d": {"READ": 0.95, "INSERT": 0.05},
    "e": {"SCAN": 0.95, "INSERT": 0.05},
    # f: a read-modify-write is a READ and an UPDATE measured together (composite).
    "f": {"READ": 0.75, "UPDATE": 0.25, "READ-MODIFY-WRITE": 0.25},
    "load": {"INSERT": 1.0},
}
T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def client_document(
    workload: str,
    index: int,
    clients: int,
    threads: int,
    throughput: float,
    operations: int,
    start: datetime,
    rng: random.Random,
) -> dict[str, Any]:
    seconds = operations / throughput
    mean_us = threads / throughput * 1e6
    ops: dict[str, OpResult] = {}
    for name, share in MIXES.get(workload, MIXES["a"]).items():
        h = hdr.new_histogram()
        for _ in range(max(1, int(operations * share))):
            h.record_value(max(1, int(rng.expovariate(1 / mean_us))))
        ops[name] = OpResult(h)
    return build_document(
        driver="ycsb",
        driver_version="0.17.0",
        phase="run",
        workload=workload,
        properties={"threadcount": str(threads)},
        labels={},
        client_index=index,
        clients=clients,
        threads=threads,
        start=start,
        end=start + timedelta(seconds=seconds),
        window=Window(
            int(start.timestamp() * 1e6),
            int((start + timedelta(seconds=seconds)).timestamp() * 1e6),
        ),
        operations=ops,
        transactions=operations,
        cpu_user_s=1.0,
        cpu_system_s=0.5,
        error=None,
        expected_ops=operations,
        throttled=False,
    )


def cpu_resources(
    step: Mapping[str, Any], nodes: Sequence[str], cpu: tuple[float, float], rng: random.Random
) -> dict[str, Any]:
    """resources.json of a step as the archive writes it: the figures and the raw per-node,
    per-mode series (CPU-seconds per second of a 2-CPU node, one point a second)."""
    start = datetime.fromisoformat(step["startTime"].replace("Z", "+00:00")).timestamp()
    end = datetime.fromisoformat(step["completionTime"].replace("Z", "+00:00")).timestamp()
    out: dict[str, Any] = {}
    for node, busy in zip(nodes, cpu, strict=True):
        modes: dict[str, list[list[float]]] = {"idle": [], "user": [], "system": []}
        t = start
        while t <= end:
            b = min(100.0, max(0.0, rng.gauss(busy, 5.0))) / 100 * 2
            modes["idle"].append([t, 2 - b])
            modes["user"].append([t, 0.7 * b])
            modes["system"].append([t, 0.3 * b])
            t += 1
        out[node] = modes
    return {"cpu": step["cpu"], "cpuSeries": {"stepSeconds": 1, "nodes": out}}


def role_status(routers: int, cores: float, rng: random.Random) -> dict[str, Any]:
    """A step's status.roles as benchmarkrun.telemetry.roles writes it: mongos and shard mongod."""
    out: dict[str, Any] = {}
    for role, total in (("mongos", cores), ("mongod", 2 * cores)):
        per = [max(0.0, rng.gauss(total / routers, 0.01 * total)) for _ in range(routers)]
        out[role] = {
            "pods": [
                {"pod": f"{role}-{i}", "cpuCores": round(c, 3), "cpuCoresMax": round(c * 1.2, 3)}
                for i, c in enumerate(per)
            ],
            "sum": {
                "pods": routers,
                "cpuCores": round(sum(per), 3),
                "cpuCoresMax": round(sum(per) * 1.2, 3),
            },
            "mean": {"cpuCores": round(sum(per) / routers, 3)},
        }
    out["missing"] = ["memory of every role (no cAdvisor series)"]
    return out


def topology(shards: int | None, members: int = 3, mongos: int = 2) -> dict[str, Any]:
    if shards is None:
        return {"type": "ReplicaSet", "replicaSet": {"members": members}}
    return {
        "type": "Sharded",
        "sharded": {
            "shards": shards,
            "membersPerShard": members,
            "configServers": 3,
            "mongos": mongos,
        },
    }


@dataclass
class FinishedRun:
    """A BenchmarkRun object as the API returns it, the client documents of each measured step
    and each step's resources.json, by step index."""

    key: str
    run: dict[str, Any]
    documents: dict[int, list[dict[str, Any]]]
    resources: dict[int, dict[str, Any]]


def benchmark_run(
    name: str,
    *,
    namespace: str = "bench",
    workloads: Sequence[str] = ("a", "c"),
    repetitions: int = 3,
    throughput: Mapping[str, float] | float = 1000.0,
    sd: float = 20.0,
    cpu: tuple[float, float] = (40.0, 20.0),
    shards: int | None = None,
    members: int = 3,
    mongos: int = 2,
    version: str = "7.0.14",
    platform: str = "kind",
    labels: Mapping[str, str] | None = None,
    spec: Mapping[str, Any] | None = None,
    clients: int = 1,
    threads: int = 4,
    operations: int = 400,
    seed: int = 1,
    little_broken: Sequence[str] = (),
    phase: str = "Succeeded",
    invalid: Mapping[str, Sequence[str]] | None = None,
    loads: int = 0,
    load_throughput: float = 2000.0,
    records: int = 1000,
    mongos_cores: float | None = None,
) -> FinishedRun:
    """A finished run with its status as the operator writes it, and its client documents.
    `invalid`: when given, every measured step carries a validity verdict, the ones named
    ("a#2") invalid for the reasons listed (validity.REASONS). `loads`: that many measured loads
    of `records` records (load.repetitions), each at about `load_throughput` records/s; without
    them the load step has no result, as in a run whose load was not collected.
    `mongos_cores`: each run step's status.roles with the routers at about that many cores
    (summed over `mongos` pods) and the shard mongods at twice that."""
    rng = random.Random(seed)
    cpu_rng = random.Random(-seed)  # apart, so the series do not shift the measurements
    steps: list[dict[str, Any]] = [
        {"index": 0, "kind": "prepare", "label": "prepare", "phase": "Succeeded"},
    ]
    documents: dict[int, list[dict[str, Any]]] = {}
    series: dict[int, dict[str, Any]] = {}
    t = T0 + timedelta(seconds=5)
    if not loads:
        steps.append({"index": 1, "kind": "load", "label": "load", "phase": "Succeeded"})
    for rep in range(1, loads + 1):
        index = len(steps)
        tp = max(1.0, rng.gauss(load_throughput, sd))
        docs = [
            client_document("load", c, clients, threads, tp / clients, records // clients, t, rng)
            for c in range(clients)
        ]
        end = t + timedelta(seconds=records / tp + 1)
        steps.append(
            {
                "index": index,
                "kind": "load",
                "label": "load" if loads == 1 else f"load #{rep}",
                "repetition": rep if loads > 1 else None,
                "phase": "Succeeded",
                "job": f"{name}-{index:02d}-load" + (f"-r{rep}" if loads > 1 else ""),
                "startTime": _iso(t),
                "completionTime": _iso(end),
                "clientsReported": clients,
                "result": summary.step_result(merge_documents(docs)),
            }
        )
        documents[index] = docs
        t = end + timedelta(seconds=1)
    for w in workloads:
        mean = throughput[w] if isinstance(throughput, Mapping) else throughput
        for rep in range(1, repetitions + 1):
            index = len(steps)
            tp = max(1.0, rng.gauss(mean, sd))
            docs = [
                client_document(w, c, clients, threads, tp / clients, operations // clients, t, rng)
                for c in range(clients)
            ]
            result = summary.step_result(merge_documents(docs))
            if f"{w}#{rep}" in little_broken:
                result["littlesLaw"] = {"ratio": 0.42, "ok": False}
            seconds = operations / tp
            end = t + timedelta(seconds=seconds + 1)
            node = f"{name}-db-0"
            steps.append(
                {
                    "index": index,
                    "kind": "run",
                    "label": f"run {w} #{rep}",
                    "workload": w,
                    "repetition": rep,
                    "phase": "Succeeded",
                    "job": f"{name}-{index:02d}-run-{w}-r{rep}",
                    "startTime": _iso(t),
                    "completionTime": _iso(end),
                    "clientsReported": clients,
                    "result": result,
                    "cpu": {
                        "window": {"start": _iso(t), "end": _iso(end), "stepSeconds": 1},
                        "nodes": [
                            {"name": node, "role": "cluster", "avg": cpu[0], "max": cpu[0] + 5},
                            {"name": "client-0", "role": "client", "avg": cpu[1], "max": 30.0},
                        ],
                        "cluster": {
                            "avg": round(rng.gauss(cpu[0], 1.0), 1),
                            "max": cpu[0] + 5,
                            "nodes": 1,
                        },
                        "clients": {
                            "avg": round(rng.gauss(cpu[1], 1.0), 1),
                            "max": 30.0,
                            "nodes": 1,
                        },
                        "mongod": None,
                    },
                }
            )
            if mongos_cores is not None:
                steps[-1]["roles"] = role_status(mongos, mongos_cores, rng)
            if invalid is not None:
                reasons = [
                    validity.Reason(r, f"{r} in {w}#{rep}") for r in invalid.get(f"{w}#{rep}", ())
                ]
                steps[-1]["validity"] = validity.judge(reasons).to_dict()
            documents[index] = docs
            series[index] = cpu_resources(steps[-1], [node, "client-0"], cpu, cpu_rng)
            t = end + timedelta(seconds=1)
    steps.append({"index": len(steps), "kind": "cleanup", "label": "cleanup", "phase": "Succeeded"})
    run_spec: dict[str, Any] = {
        "clusterRef": {"name": f"{name}-db"},
        "workloads": [{"name": w} for w in workloads],
        "repetitions": repetitions,
        "run": {"operationCount": operations, "threads": threads},
        "clients": {"parallelism": clients},
        "labels": dict(labels or {}),
    }
    if loads:
        run_spec["load"] = {"recordCount": records, "repetitions": loads}
    for key, value in (spec or {}).items():
        if isinstance(value, Mapping) and isinstance(run_spec.get(key), dict):
            run_spec[key] = {**run_spec[key], **value}
        else:
            run_spec[key] = value
    status = {
        "phase": phase,
        "startTime": _iso(T0),
        "completionTime": _iso(t),
        "progress": {
            "step": len(steps),
            "steps": len(steps),
            "percent": 100,
            "summary": f"{len(steps)}/{len(steps)}",
            "current": "done",
        },
        "clusterSnapshot": {
            "name": f"{name}-db",
            "version": version,
            "topology": topology(shards, members, mongos),
            "platform": {"provider": platform, "instanceTypes": ["m5.large"], "zones": []},
            "replicaSets": [],
            "nodes": [{"name": f"{name}-db-0", "instanceType": "m5.large", "zone": None}],
        },
        "steps": steps,
        "summary": summary.summarise(steps),
        "conditions": [
            {
                "type": "Succeeded",
                "status": "True" if phase == "Succeeded" else "False",
                "reason": phase,
                "message": "all steps succeeded",
            },
            {
                "type": "CPUCollected",
                "status": "True",
                "reason": "Collected",
                "message": "CPU collected for every step",
            },
        ],
    }
    obj = {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": str(uuid.UUID(int=rng.getrandbits(128))),
            "creationTimestamp": _iso(T0),
        },
        "spec": run_spec,
        "status": status,
    }
    return FinishedRun(name, obj, documents, series)


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")
