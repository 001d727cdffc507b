"""Combines the result documents of parallel clients into one aggregate document (pure).

Counts, errors, return codes and CPU add up; latency statistics are recomputed from the sum of
the clients' HDR histograms, so aggregate percentiles are exact (never an average of
percentiles). Throughput is all operations over the step's one measured window (never a sum of
the clients' own rates, which overstates it whenever their windows differ). Depends only on the
standard library and `hdrhistogram`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mongobench_results import hdr
from mongobench_results.document import (
    API_VERSION,
    FAILED,
    SUCCEEDED,
    Document,
    Window,
    iso,
    latency_block,
    sanity,
    upgrade,
)


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _merge_op(entries: list[dict[str, Any]]) -> dict[str, Any]:
    h = hdr.merge_encoded(e["hdr"] for e in entries)
    codes: dict[str, int] = {}
    for e in entries:
        for code, n in e["returnCodes"].items():
            codes[code] = codes.get(code, 0) + n
    out: dict[str, Any] = {
        "count": int(h.get_total_count()),
        "errors": sum(e["errors"] for e in entries),
        "returnCodes": dict(sorted(codes.items())),
        "latencyUs": latency_block(h),
        "hdr": hdr.encode(h),
    }
    if any(e.get("composite") for e in entries):
        out["composite"] = True
    failed = [e["failed"] for e in entries if e.get("failed")]
    if failed:
        fh = hdr.merge_encoded(f["hdr"] for f in failed)
        out["failed"] = {
            "count": int(fh.get_total_count()),
            "latencyUs": latency_block(fh),
            "hdr": hdr.encode(fh),
        }
    return out


def merge_documents(documents: list[Document]) -> Document:
    """One step's documents (v1 or v2) as one v2 document over the step's measured window:
    from the first client's first operation to the last client's last (every measured operation
    is inside it; a common overlap would have to drop operations the histograms cannot tell
    apart). Throughput = all operations / that window; per-client figures keep each client's own
    window and its skew against the step's."""
    if not documents:
        raise ValueError("nothing to merge")
    documents = [upgrade(d) for d in documents]
    first = documents[0]
    for key in ("driver", "phase", "workload"):
        values = {d[key] for d in documents}
        if len(values) > 1:
            raise ValueError(f"cannot merge results of different {key}s: {sorted(values)}")
    warnings: list[str] = []
    expected_clients = max(d["client"]["count"] for d in documents)
    indices = sorted(d["client"]["index"] for d in documents)
    if indices != list(range(expected_clients)):
        warnings.append(
            f"client results {indices} do not cover clients 0..{expected_clients - 1} exactly"
        )

    names = sorted({name for d in documents for name in d["operations"]})
    operations = {
        name: _merge_op([d["operations"][name] for d in documents if name in d["operations"]])
        for name in names
    }
    windows = {d["client"]["index"]: Window.of(d["window"]) for d in documents}
    measured = [d for d in documents if d["operationsTotal"] > 0] or documents
    mine = [windows[d["client"]["index"]] for d in measured]
    sources = sorted({w.source for w in mine})
    window = Window(
        min(w.start_us for w in mine),
        max(w.end_us for w in mine),
        sources[0] if len(sources) == 1 else "+".join(sources),
    )
    seconds = window.seconds
    total_ops = sum(d["operationsTotal"] for d in documents)
    threads = sum(d["client"]["threads"] for d in documents)
    # Thread-seconds the clients had inside the window, over the window: what Little's law
    # expects in flight when every thread is always inside an operation.
    expected = (
        sum(d["client"]["threads"] * windows[d["client"]["index"]].seconds for d in measured)
        / seconds
        if seconds > 0
        else float(threads)
    )
    user = sum(d["clientCpu"]["userSeconds"] for d in documents)
    system = sum(d["clientCpu"]["systemSeconds"] for d in documents)
    throttled = any(d["sanity"]["littlesLaw"].get("throttled") for d in documents)

    check = sanity(
        operations,
        seconds,
        expected,
        throttled=throttled,
        expected_ops=None,
        transactions=total_ops,
    )
    for d in documents:
        if not d["sanity"]["littlesLaw"]["ok"] and d["operationsTotal"]:
            warnings.append(
                f"client {d['client']['index']}: Little's law ratio "
                f"{d['sanity']['littlesLaw']['ratio']}"
            )
    clients = []
    for d in sorted(documents, key=lambda d: d["client"]["index"]):
        w = windows[d["client"]["index"]]
        clients.append(
            {
                "index": d["client"]["index"],
                "host": d["client"]["host"],
                "status": d["status"],
                "threads": d["client"]["threads"],
                "operationsTotal": d["operationsTotal"],
                "throughput": d["throughput"],
                "window": w.block(),
                "runtimeSeconds": round(w.seconds, 6),
                "startSkewSeconds": round((w.start_us - window.start_us) / 1e6, 6),
                "endSkewSeconds": round((window.end_us - w.end_us) / 1e6, 6),
                "readyAt": (d.get("startGate") or {}).get("readyAt"),
                **({"steadiness": d["steadiness"]} if d.get("steadiness") else {}),
            }
        )
    counted = [c for c in clients if c["operationsTotal"] > 0]
    start_skew = max((c["startSkewSeconds"] for c in counted), default=0.0)
    end_spread = max((c["endSkewSeconds"] for c in counted), default=0.0)
    if len(counted) > 1 and seconds > 0 and start_skew > 0.05 * seconds:
        warnings.append(
            f"clients started {start_skew:.3f} s apart ({100 * start_skew / seconds:.1f}% of "
            "the window): fewer clients than configured ran at the start"
        )
    if len(counted) > 1 and seconds > 0 and end_spread > 0.05 * seconds:
        warnings.append(
            f"clients finished {end_spread:.3f} s apart ({100 * end_spread / seconds:.1f}% of "
            "the window): fewer clients than configured ran at the end"
        )
    check["warnings"].extend(warnings)
    errors = [
        f"client {d['client']['index']}: {d['error']}" for d in documents if d["status"] == FAILED
    ]
    gates = [d["startGate"] for d in documents if d.get("startGate")]
    return {
        "apiVersion": API_VERSION,
        "kind": first["kind"],
        "driver": first["driver"],
        "driverVersion": first["driverVersion"],
        "phase": first["phase"],
        "workload": first["workload"],
        "client": {"index": None, "count": expected_clients, "threads": threads, "host": None},
        "properties": first["properties"],
        "labels": first["labels"],
        "startTime": first["startTime"] if len(documents) == 1 else iso(_earliest(documents)),
        "endTime": first["endTime"] if len(documents) == 1 else iso(_latest(documents)),
        "status": FAILED if errors else SUCCEEDED,
        "error": "; ".join(errors) if errors else None,
        "window": window.block(),
        "startGate": {"startAt": gates[0].get("startAt")} if gates else None,
        "driverRuntimeSeconds": None,
        "startSkewSeconds": round(start_skew, 6),
        "endSpreadSeconds": round(end_spread, 6),
        "throughput": round(total_ops / seconds, 3) if seconds > 0 else 0.0,
        "runtimeSeconds": round(seconds, 6),
        "operationsTotal": total_ops,
        "operations": operations,
        "clientCpu": {
            "userSeconds": round(user, 3),
            "systemSeconds": round(system, 3),
            "totalSeconds": round(user + system, 3),
            "secondsPer1000Ops": round((user + system) / total_ops * 1000, 4)
            if total_ops
            else None,
            **_merged_cfs(documents),
        },
        "sanity": check,
        "clients": clients,
        **_merged_series(documents),
    }


def _merged_cfs(documents: list[Document]) -> dict[str, int]:
    """The clients' CFS periods and throttled periods added up, when every client has them."""
    cpus = [d["clientCpu"] for d in documents]
    if not all("cfsPeriods" in c for c in cpus):
        return {}
    return {
        "cfsPeriods": sum(c["cfsPeriods"] for c in cpus),
        "cfsThrottledPeriods": sum(c["cfsThrottledPeriods"] for c in cpus),
    }


def _merged_series(documents: list[Document]) -> dict[str, Any]:
    """The step's throughput per interval: the clients' series added point by point (they
    start together at the start barrier; a client with fewer points adds nothing after its
    end). Only when every client has one, at one interval."""
    series = [d.get("series") for d in documents]
    if not series or any(s is None for s in series):
        return {}
    intervals = {s["intervalSeconds"] for s in series if s is not None}
    if len(intervals) != 1:
        return {}
    longest = max(len(s["throughput"]) for s in series if s is not None)
    total = [0.0] * longest
    for s in series:
        assert s is not None
        for i, value in enumerate(s["throughput"]):
            total[i] += value
    out: dict[str, Any] = {
        "intervalSeconds": intervals.pop(),
        "startSeconds": min(s["startSeconds"] for s in series if s is not None),
        "throughput": [round(v, 1) for v in total],
    }
    if all(s is not None and "latencyAvgUs" in s for s in series):
        out["latencyAvgUs"] = _merged_latency([s for s in series if s is not None], longest)
    return {"series": out}


def _merged_latency(series: list[dict[str, Any]], length: int) -> list[float | None]:
    """The clients' mean latency per interval, each weighted by its throughput then (the
    mean over all of the interval's operations); None where no client had one."""
    out: list[float | None] = []
    for i in range(length):
        weighted = [
            (s["latencyAvgUs"][i], s["throughput"][i])
            for s in series
            if i < len(s["latencyAvgUs"]) and s["latencyAvgUs"][i] is not None
        ]
        ops = sum(w for _, w in weighted)
        out.append(round(sum(v * w for v, w in weighted) / ops, 1) if ops > 0 else None)
    return out


def _earliest(documents: list[Document]) -> datetime:
    return min(_ts(d["startTime"]) for d in documents)


def _latest(documents: list[Document]) -> datetime:
    return max(_ts(d["endTime"]) for d in documents)
