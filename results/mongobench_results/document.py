"""The result document (apiVersion mongobench.io/result/v2) and its sanity checks.

One document per client run; `merge.merge_documents` combines the documents of parallel clients.
The JSON Schema is results/schema/v2.json (v1.json: the previous version, read by `upgrade`).
Latencies are microseconds.

The measured window (v2): from the start of the client's first operation to the end of its last,
taken from the driver's own operation timestamps, so connecting, thread start-up and the start
barrier are outside it. `throughput` = `operationsTotal` / `window.seconds` and `runtimeSeconds`
= `window.seconds`: one denominator. `upgrade` reads v1 documents (see its rule).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hdrh.histogram import HdrHistogram

from mongobench_results import hdr

API_VERSION = "mongobench.io/result/v2"
API_VERSION_V1 = "mongobench.io/result/v1"
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


def iso_us(epoch_us: int) -> str:
    """Microsecond timestamps: windows are recomputed from them exactly."""
    ts = datetime.fromtimestamp(epoch_us // 1_000_000, UTC).replace(
        microsecond=epoch_us % 1_000_000
    )
    return ts.isoformat(timespec="microseconds").replace("+00:00", "Z")


def epoch_us(text: str) -> int:
    ts = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int(ts.timestamp()) * 1_000_000 + ts.microsecond


@dataclass(frozen=True)
class Window:
    """When the measured operations ran, epoch microseconds. `source`: "operations" (the
    driver's operation timestamps), "driver" (the driver's own run time, start-up included: only
    when no timestamps exist) or "process" (a v1 document's process span)."""

    start_us: int
    end_us: int
    source: str = "operations"

    @property
    def seconds(self) -> float:
        return max(self.end_us - self.start_us, 0) / 1e6

    def block(self) -> dict[str, Any]:
        return {
            "start": iso_us(self.start_us),
            "end": iso_us(self.end_us),
            "seconds": round(self.seconds, 6),
            "source": self.source,
        }

    @classmethod
    def of(cls, block: dict[str, Any]) -> Window:
        return cls(epoch_us(block["start"]), epoch_us(block["end"]), block.get("source", "?"))


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


def littles_law(
    operations: dict[str, Any], window_s: float, expected: float, *, throttled: bool
) -> dict[str, Any]:
    """Observed concurrency = time inside operations / the measured window (= throughput x
    mean latency), against the expected concurrency: the client threads, weighted by the share
    of the window each client was running (a client that finished early had no threads working
    after its end).

    A closed-loop client with N threads keeps at most N operations in flight, so the observed
    value must not exceed N; without a target rate it should be close to N.
    """
    observed = busy_microseconds(operations) / 1e6 / window_s if window_s > 0 else 0.0
    ratio = observed / expected if expected > 0 else 0.0
    ok = ratio <= LITTLE_UPPER and (throttled or ratio >= LITTLE_LOWER)
    if ratio > LITTLE_UPPER:
        diagnosis = (
            f"{observed:.2f} operations in flight on average, more than the {expected:.2f} "
            "threads allow: throughput, latency or thread count is misrecorded"
        )
    elif ratio < LITTLE_LOWER and not throttled:
        diagnosis = (
            f"{observed:.2f} of {expected:.2f} threads busy on average: the clients spent "
            "time outside database calls (client-bound, or stalls between operations)"
        )
    else:
        diagnosis = f"{observed:.2f} of {expected:.2f} threads busy on average" + (
            " (target rate set: idle threads expected)" if throttled else ""
        )
    return {
        "expectedConcurrency": round(expected, 4),
        "observed": round(observed, 4),
        "ratio": round(ratio, 4),
        "ok": ok,
        "throttled": throttled,
        "windowSeconds": round(window_s, 6),
        "diagnosis": f"{diagnosis}, over the {window_s:.3f} s window",
    }


# Below this measured window a step has too few per-second throughput samples for the steadiness
# check (validity NotSteady) to find a warm-up; from it on, the check judges the warm-up itself.
SHORT_RUN_SECONDS = 10.0


def sanity(
    operations: dict[str, Any],
    window_s: float,
    expected_concurrency: float,
    *,
    throttled: bool,
    expected_ops: int | None,
    transactions: int,
) -> dict[str, Any]:
    warnings: list[str] = []
    law = littles_law(operations, window_s, expected_concurrency, throttled=throttled)
    if not law["ok"]:
        warnings.append(f"Little's law (ratio {law['ratio']:.2f}): {law['diagnosis']}")
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
    if 0 < window_s < SHORT_RUN_SECONDS:
        warnings.append(
            f"short run ({window_s:.1f} s): too few throughput samples to see a warm-up; "
            "throughput and tail latency may include one"
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
    window: Window,
    operations: dict[str, OpResult],
    transactions: int,
    cpu_user_s: float,
    cpu_system_s: float,
    error: str | None,
    expected_ops: int | None,
    throttled: bool,
    driver_runtime_s: float | None = None,
    start_gate: dict[str, Any] | None = None,
    extra_warnings: list[str] | None = None,
    series: dict[str, Any] | None = None,
    steadiness: dict[str, Any] | None = None,
    cfs: tuple[int, int] | None = None,
) -> Document:
    """`start`/`end`: the runner process; `window`: the measured operations (see the module).
    `series`: the throughput of every status interval; `steadiness`: mongobench_results.steady's
    verdict on it (the runner computes both; documents without them stay valid). `cfs`: (CFS
    periods, throttled periods) of the client's CPU cgroup during the run, where a limit is
    enforced."""
    ops = {
        name: operation_entry(name, op)
        for name, op in sorted(operations.items())
        if name not in IGNORED_OPS
    }
    seconds = window.seconds
    throughput = transactions / seconds if seconds > 0 else 0.0
    cpu_total = cpu_user_s + cpu_system_s
    check = sanity(
        ops,
        seconds,
        threads,
        throttled=throttled,
        expected_ops=expected_ops,
        transactions=transactions,
    )
    check["warnings"].extend(extra_warnings or [])
    extra: dict[str, Any] = {}
    if series is not None:
        extra["series"] = series
    if steadiness is not None:
        extra["steadiness"] = steadiness
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
        "window": window.block(),
        "startGate": start_gate,
        "driverRuntimeSeconds": None if driver_runtime_s is None else round(driver_runtime_s, 3),
        "throughput": round(throughput, 3),
        "runtimeSeconds": round(seconds, 6),
        "operationsTotal": transactions,
        "operations": ops,
        "clientCpu": {
            "userSeconds": round(cpu_user_s, 3),
            "systemSeconds": round(cpu_system_s, 3),
            "totalSeconds": round(cpu_total, 3),
            "secondsPer1000Ops": round(cpu_total / transactions * 1000, 4)
            if transactions
            else None,
            **({"cfsPeriods": cfs[0], "cfsThrottledPeriods": cfs[1]} if cfs else {}),
        },
        "sanity": check,
        **extra,
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
    at = int(now.timestamp() * 1e6)
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
        window=Window(at, at, "operations"),
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
        f"{doc['throughput']:.1f} ops/s over the {doc['runtimeSeconds']:.3f} s measured window, "
        f"{doc['operationsTotal']} operations"
    )
    if doc.get("error"):
        text += f"; error: {doc['error']}"
    if not doc["sanity"]["littlesLaw"]["ok"] and doc["operationsTotal"]:
        text += f"; sanity: Little's law ratio {doc['sanity']['littlesLaw']['ratio']}"
    return text


def upgrade(doc: Document) -> Document:
    """Any supported document as v2 (a copy; v2 documents are returned as they are).

    The v1 rule: v1 kept no operation timestamps. A client document's window is YCSB's own run
    time ending at the document's endTime (source "driver": start-up included, as v1 measured);
    its throughput is unchanged. A merged v1 document's window is its process span
    (startTime..endTime, source "process") and its throughput becomes operations / that span
    (v1's wallClockThroughput), never v1's sum of client rates.
    """
    version = doc.get("apiVersion")
    if version == API_VERSION:
        return doc
    if version != API_VERSION_V1:
        raise ValueError(f"unsupported result apiVersion {version!r}")
    out = {k: v for k, v in doc.items() if k != "wallClockThroughput"}
    out["apiVersion"] = API_VERSION
    end = epoch_us(doc["endTime"])
    merged = (doc.get("client") or {}).get("index") is None and "clients" in doc
    if merged:
        window = Window(epoch_us(doc["startTime"]), end, "process")
        ops = int(doc.get("operationsTotal") or 0)
        out["throughput"] = round(ops / window.seconds, 3) if window.seconds > 0 else 0.0
    else:
        window = Window(end - round(float(doc.get("runtimeSeconds") or 0) * 1e6), end, "driver")
    out["window"] = window.block()
    out["runtimeSeconds"] = round(window.seconds, 6)
    out.setdefault("startGate", None)
    out.setdefault("driverRuntimeSeconds", doc.get("runtimeSeconds"))
    law = dict((doc.get("sanity") or {}).get("littlesLaw") or {})
    law.setdefault("windowSeconds", round(window.seconds, 6))
    law.setdefault("diagnosis", "v1 document: measured over the driver's run time")
    out["sanity"] = {**(doc.get("sanity") or {}), "littlesLaw": law}
    return out
