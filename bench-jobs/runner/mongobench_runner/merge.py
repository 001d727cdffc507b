"""Combines the result documents of parallel clients into one aggregate document (pure).

Counts, errors, return codes and CPU add up; latency statistics are recomputed from the sum of
the clients' HDR histograms, so aggregate percentiles are exact (never an average of
percentiles). Throughput is the sum of the clients' throughputs (each over its own runtime);
`wallClockThroughput` divides all operations by the span from the first start to the last end.
Depends only on the standard library and `hdrhistogram`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mongobench_runner import hdr
from mongobench_runner.result import (
    API_VERSION,
    FAILED,
    SUCCEEDED,
    Document,
    iso,
    latency_block,
    sanity,
)


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _merge_op(entries: list[dict[str, Any]]) -> dict[str, Any]:
    h = hdr.merge([hdr.decode(e["hdr"]) for e in entries])
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
        fh = hdr.merge([hdr.decode(f["hdr"]) for f in failed])
        out["failed"] = {
            "count": int(fh.get_total_count()),
            "latencyUs": latency_block(fh),
            "hdr": hdr.encode(fh),
        }
    return out


def merge_documents(documents: list[Document]) -> Document:
    if not documents:
        raise ValueError("nothing to merge")
    for d in documents:
        if d.get("apiVersion") != API_VERSION:
            raise ValueError(f"unsupported result apiVersion {d.get('apiVersion')!r}")
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
    start = min(_ts(d["startTime"]) for d in documents)
    end = max(_ts(d["endTime"]) for d in documents)
    span = (end - start).total_seconds()
    total_ops = sum(d["operationsTotal"] for d in documents)
    threads = sum(d["client"]["threads"] for d in documents)
    runtime = max(d["runtimeSeconds"] for d in documents)
    user = sum(d["clientCpu"]["userSeconds"] for d in documents)
    system = sum(d["clientCpu"]["systemSeconds"] for d in documents)
    throttled = any(d["sanity"]["littlesLaw"].get("throttled") for d in documents)

    # Little's law per client (each has its own runtime), then as a whole over the longest run.
    check = sanity(
        operations,
        runtime,
        threads,
        throttled=throttled,
        expected_ops=None,
        transactions=total_ops,
    )
    for d in documents:
        if not d["sanity"]["littlesLaw"]["ok"]:
            warnings.append(
                f"client {d['client']['index']}: Little's law ratio "
                f"{d['sanity']['littlesLaw']['ratio']}"
            )
    check["warnings"].extend(warnings)
    errors = [
        f"client {d['client']['index']}: {d['error']}" for d in documents if d["status"] == FAILED
    ]
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
        "startTime": first["startTime"] if len(documents) == 1 else iso(start),
        "endTime": first["endTime"] if len(documents) == 1 else iso(end),
        "status": FAILED if errors else SUCCEEDED,
        "error": "; ".join(errors) if errors else None,
        "throughput": round(sum(d["throughput"] for d in documents), 3),
        "wallClockThroughput": round(total_ops / span, 3) if span > 0 else 0.0,
        "runtimeSeconds": runtime,
        "operationsTotal": total_ops,
        "operations": operations,
        "clientCpu": {
            "userSeconds": round(user, 3),
            "systemSeconds": round(system, 3),
            "totalSeconds": round(user + system, 3),
            "secondsPer1000Ops": round((user + system) / total_ops * 1000, 4)
            if total_ops
            else None,
        },
        "sanity": check,
        "clients": [
            {
                "index": d["client"]["index"],
                "host": d["client"]["host"],
                "status": d["status"],
                "throughput": d["throughput"],
                "runtimeSeconds": d["runtimeSeconds"],
                "operationsTotal": d["operationsTotal"],
            }
            for d in sorted(documents, key=lambda d: d["client"]["index"])
        ],
    }
