"""The result document (apiVersion mongobench.io/result/v1) and its sanity checks.

One document per client run; `merge.merge_documents` combines the documents of parallel clients.
The JSON Schema is bench-jobs/result-schema/v1.json. Latencies are microseconds.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hdrh.histogram import HdrHistogram

from mongobench_runner import hdr

API_VERSION = "mongobench.io/result/v1"
KIND = "BenchmarkResult"
SUCCEEDED = "Succeeded"
FAILED = "Failed"

# YCSB return codes that count as success (BATCHED_OK: queued by the binding's insert batching).
OK_CODES = frozenset({"OK", "BATCHED_OK"})
# Measurements that are not one database operation each.
COMPOSITE_OPS = frozenset({"READ-MODIFY-WRITE"})
IGNORED_OPS = frozenset({"CLEANUP"})

# Little's law tolerance: throughput x mean latency may not exceed the threads (a recording
# error: more work in flight than there are workers) and, without a target rate, should not fall
# far below them (time the client spent outside operations: an overloaded client).
LITTLE_UPPER = 1.10
LITTLE_LOWER = 0.70

Document = dict[str, Any]


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(ts: datetime) -> str:
    return ts.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class OpResult:
    """One operation type's measurements: successful ops, and failed ops when they were timed."""

    histogram: HdrHistogram
    return_codes: dict[str, int] = field(default_factory=dict)
    failed_histogram: HdrHistogram | None = None

    @property
    def errors(self) -> int:
        return sum(n for code, n in self.return_codes.items() if code not in OK_CODES)


def latency_block(h: HdrHistogram) -> dict[str, Any]:
    s = hdr.summarise(h)
    return {
        "avg": round(s.avg, 3),
        "min": s.min,
        "p50": s.p50,
        "p95": s.p95,
        "p99": s.p99,
        "p999": s.p999,
        "max": s.max,
    }


def operation_entry(name: str, op: OpResult) -> dict[str, Any]:
    count = int(op.histogram.get_total_count())
    codes = dict(op.return_codes) or {"OK": count}
    entry: dict[str, Any] = {
        "count": count,
        "errors": op.errors,
        "returnCodes": codes,
        "latencyUs": latency_block(op.histogram),
        "hdr": hdr.encode(op.histogram),
    }
    if name in COMPOSITE_OPS:
        entry["composite"] = True
    if op.failed_histogram is not None and op.failed_histogram.get_total_count() > 0:
        entry["failed"] = {
            "count": int(op.failed_histogram.get_total_count()),
            "latencyUs": latency_block(op.failed_histogram),
            "hdr": hdr.encode(op.failed_histogram),
        }
    return entry


def busy_microseconds(operations: dict[str, Any]) -> float:
    """Total time spent inside database operations (successful and timed failures)."""
    total = 0.0
    for name, entry in operations.items():
        if name in COMPOSITE_OPS or entry.get("composite"):
            continue
        total += entry["count"] * entry["latencyUs"]["avg"]
        failed = entry.get("failed")
        if failed:
            total += failed["count"] * failed["latencyUs"]["avg"]
    return total


def primitive_operations(operations: dict[str, Any]) -> int:
    return sum(
        e["count"] + e["errors"]
        for name, e in operations.items()
        if name not in COMPOSITE_OPS and not e.get("composite")
    )


def littles_law(
    operations: dict[str, Any], runtime_s: float, threads: int, *, throttled: bool
) -> dict[str, Any]:
    """Observed concurrency = time inside operations / wall time (= throughput x mean latency).

    A closed-loop client with N threads keeps at most N operations in flight, so the observed
    value must not exceed N; without a target rate it should be close to N.
    """
    observed = busy_microseconds(operations) / 1e6 / runtime_s if runtime_s > 0 else 0.0
    ratio = observed / threads if threads > 0 else 0.0
    ok = ratio <= LITTLE_UPPER and (throttled or ratio >= LITTLE_LOWER)
    return {
        "expectedConcurrency": threads,
        "observed": round(observed, 4),
        "ratio": round(ratio, 4),
        "ok": ok,
        "throttled": throttled,
    }


def sanity(
    operations: dict[str, Any],
    runtime_s: float,
    threads: int,
    *,
    throttled: bool,
    expected_ops: int | None,
    transactions: int,
) -> dict[str, Any]:
    warnings: list[str] = []
    law = littles_law(operations, runtime_s, threads, throttled=throttled)
    if not law["ok"]:
        if law["ratio"] > LITTLE_UPPER:
            warnings.append(
                f"Little's law: throughput x mean latency = {law['observed']:.2f} operations in "
                f"flight, more than the {threads} client threads allow (ratio {law['ratio']:.2f}):"
                " throughput, latency or thread count is misrecorded"
            )
        else:
            warnings.append(
                f"Little's law: throughput x mean latency = {law['observed']:.2f} operations in "
                f"flight for {threads} threads (ratio {law['ratio']:.2f}): the client spent much "
                "of its time outside database calls (client-bound, or stalls between operations)"
            )
    if expected_ops is not None and transactions != expected_ops:
        warnings.append(
            f"{transactions} operations recorded, {expected_ops} requested"
            " (stopped early by maxexecutiontime, a failure, or a recording error)"
        )
    errors = sum(e["errors"] for e in operations.values())
    if errors:
        per_op = ", ".join(
            f"{name}: {e['errors']}" for name, e in sorted(operations.items()) if e["errors"]
        )
        warnings.append(f"{errors} operations failed ({per_op})")
    if 0 < runtime_s < 30:
        warnings.append(
            f"short run ({runtime_s:.1f} s): throughput and tail latency include warm-up"
        )
    return {"littlesLaw": law, "warnings": warnings}


def build_document(
    *,
    driver: str,
    driver_version: str,
    phase: str,
    workload: str,
    properties: dict[str, str],
    labels: dict[str, str],
    client_index: int,
    clients: int,
    threads: int,
    start: datetime,
    end: datetime,
    runtime_s: float,
    operations: dict[str, OpResult],
    transactions: int,
    cpu_user_s: float,
    cpu_system_s: float,
    error: str | None,
    expected_ops: int | None,
    throttled: bool,
    extra_warnings: list[str] | None = None,
) -> Document:
    ops = {
        name: operation_entry(name, op)
        for name, op in sorted(operations.items())
        if name not in IGNORED_OPS
    }
    throughput = transactions / runtime_s if runtime_s > 0 else 0.0
    cpu_total = cpu_user_s + cpu_system_s
    check = sanity(
        ops,
        runtime_s,
        threads,
        throttled=throttled,
        expected_ops=expected_ops,
        transactions=transactions,
    )
    check["warnings"].extend(extra_warnings or [])
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "driver": driver,
        "driverVersion": driver_version,
        "phase": phase,
        "workload": workload,
        "client": {
            "index": client_index,
            "count": clients,
            "threads": threads,
            "host": socket.gethostname(),
        },
        "properties": dict(sorted(properties.items())),
        "labels": dict(sorted(labels.items())),
        "startTime": iso(start),
        "endTime": iso(end),
        "status": FAILED if error else SUCCEEDED,
        "error": error,
        "throughput": round(throughput, 3),
        "runtimeSeconds": round(runtime_s, 3),
        "operationsTotal": transactions,
        "operations": ops,
        "clientCpu": {
            "userSeconds": round(cpu_user_s, 3),
            "systemSeconds": round(cpu_system_s, 3),
            "totalSeconds": round(cpu_total, 3),
            "secondsPer1000Ops": round(cpu_total / transactions * 1000, 4)
            if transactions
            else None,
        },
        "sanity": check,
    }


def failed_document(
    *,
    driver: str,
    phase: str,
    workload: str,
    properties: dict[str, str],
    labels: dict[str, str],
    client_index: int,
    clients: int,
    threads: int,
    start: datetime,
    error: str,
) -> Document:
    """A document for a run that produced no measurements at all (e.g. bad arguments)."""
    now = utc_now()
    return build_document(
        driver=driver,
        driver_version="unknown",
        phase=phase,
        workload=workload,
        properties=properties,
        labels=labels,
        client_index=client_index,
        clients=clients,
        threads=threads,
        start=start,
        end=now,
        runtime_s=0.0,
        operations={},
        transactions=0,
        cpu_user_s=0.0,
        cpu_system_s=0.0,
        error=error,
        expected_ops=None,
        throttled=False,
    )


def summary_line(doc: Document) -> str:
    """The short text for /dev/termination-log and the last log line."""
    text = (
        f"{doc['status']}: {doc['driver']} {doc['phase']} workload {doc['workload']} "
        f"client {doc['client']['index']}/{doc['client']['count']}: "
        f"{doc['throughput']:.1f} ops/s over {doc['runtimeSeconds']:.1f} s, "
        f"{doc['operationsTotal']} operations"
    )
    if doc.get("error"):
        text += f"; error: {doc['error']}"
    if not doc["sanity"]["littlesLaw"]["ok"] and doc["operationsTotal"]:
        text += f"; sanity: Little's law ratio {doc['sanity']['littlesLaw']['ratio']}"
    return text
