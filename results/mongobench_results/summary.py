"""What status keeps of results (pure): a step's entry, a run's summary per workload, an
experiment cell's summary and its comparison rows.

The full documents stay in the result ConfigMaps and the archive; status keeps figures a reader
needs at a glance, each recomputable from the others (throughput = operationsTotal /
window.seconds). The operator writes these; the CLI's tests build finished runs with them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mongobench_results import records, stats

# Status keeps per-client figures while steps x clients stays under this; beyond it they stay in
# the result documents only (the status says so), so a 200-step x 64-client run still fits.
PER_CLIENT_BUDGET = 400
STATUS_WARNINGS = 10


def step_result(
    doc: Mapping[str, Any], per_client: bool = True, series: bool = False
) -> dict[str, Any]:
    """The per-step entry kept in status (the full documents stay in ConfigMaps and the
    archive). Every figure is recomputable from the others: throughput = operationsTotal /
    window.seconds = operationsTotal / runtimeSeconds. `series`: keep the per-interval series
    too (a duet's side: the paired comparison reads it from status and the archive)."""
    ops = {}
    for name, op in sorted((doc.get("operations") or {}).items()):
        lat = op.get("latencyUs") or {}
        ops[name] = {
            "count": op.get("count", 0),
            "errors": op.get("errors", 0),
            **{k: _round(lat.get(k)) for k in ("min", "avg", "p50", "p95", "p99", "p999", "max")},
        }
    law = (doc.get("sanity") or {}).get("littlesLaw") or {}
    warnings = list((doc.get("sanity") or {}).get("warnings") or [])
    if len(warnings) > STATUS_WARNINGS:
        more = len(warnings) - STATUS_WARNINGS + 1
        warnings = [
            *warnings[: STATUS_WARNINGS - 1],
            f"{more} more warnings in the step's result documents",
        ]
    clients = doc.get("clients") or []
    out: dict[str, Any] = {
        "status": doc.get("status"),
        "error": doc.get("error") or None,
        "throughput": _round(doc.get("throughput")),
        "runtimeSeconds": doc.get("runtimeSeconds"),
        "operationsTotal": doc.get("operationsTotal"),
        "window": doc.get("window"),
        "clients": len(clients) or 1,
        "startSkewSeconds": doc.get("startSkewSeconds", 0.0),
        "endSpreadSeconds": doc.get("endSpreadSeconds", 0.0),
        "operations": ops,
        "latencyUnit": "us",
        "littlesLaw": {
            "ratio": _round(law.get("ratio")),
            "ok": law.get("ok"),
            "observed": _round(law.get("observed")),
            "expected": _round(law.get("expectedConcurrency")),
            "diagnosis": law.get("diagnosis"),
        },
        "warnings": warnings,
    }
    if (doc.get("startGate") or {}).get("startAt"):
        out["startAt"] = doc["startGate"]["startAt"]
    if series and doc.get("series"):
        out["series"] = doc["series"]
    if clients and per_client:
        out["perClient"] = [
            {
                "index": c["index"],
                "status": c.get("status"),
                "operationsTotal": c.get("operationsTotal"),
                "throughput": _round(c.get("throughput")),
                "windowSeconds": (c.get("window") or {}).get("seconds", c.get("runtimeSeconds")),
                "startSkewSeconds": c.get("startSkewSeconds"),
                "endSkewSeconds": c.get("endSkewSeconds"),
            }
            for c in clients
        ]
    elif clients:
        out["perClient"] = "in the result documents (too many steps x clients for status)"
    return out


def summarise(steps: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per workload over its measured repetitions: mean, SD and n of throughput and of each
    operation's mean and p99 latency (SD is the sample SD; n=1 has none). The loads come first,
    as workload `load`; every workload has its seconds (a load's time to load, a run phase's
    run time)."""
    steps = list(steps)  # read twice below (loads first): a generator would be spent
    by_workload: dict[str, list[Mapping[str, Any]]] = {}
    for step in steps:
        if step.get("phase") != "Succeeded" or not step.get("result"):
            continue
        if step.get("kind") == "load":
            by_workload.setdefault(records.LOAD, []).append(step["result"])
    for step in steps:
        if step.get("kind") == "run" and step.get("phase") == "Succeeded" and step.get("result"):
            by_workload.setdefault(str(step["workload"]), []).append(step["result"])
    out = []
    for workload, results in by_workload.items():
        entry: dict[str, Any] = {
            "workload": workload,
            "n": len(results),
            "throughput": _stats([r["throughput"] for r in results]),
            "operations": {},
        }
        # A load's time to load; a workload's run time (one operation's, for a timed query).
        seconds = [records.step_seconds(r) for r in results]
        entry["seconds"] = _stats([s for s in seconds if s is not None])
        names = sorted({op for r in results for op in r["operations"]})
        for op in names:
            present = [r["operations"][op] for r in results if op in r["operations"]]
            entry["operations"][op] = {
                "avg": _stats([o["avg"] for o in present if o["avg"] is not None]),
                "p99": _stats([o["p99"] for o in present if o["p99"] is not None]),
            }
        out.append(entry)
    return out


def _stats(values: Sequence[float]) -> dict[str, Any]:
    s = stats.summarise(values)
    return {"mean": _round(s.mean), "sd": _round(s.sd), "n": s.n}


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 3) if math.isfinite(value) else None
    return value


def workload_summary(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per workload over the cell's runs: n, mean throughput and mean of the operations' worst
    p99 (microseconds), from the measured steps as `mongobench compare` reads them."""
    acc: dict[str, list[tuple[float, float | None, float | None]]] = {}
    for r in runs:
        for step in records.results(r):
            result = step.result or {}
            value = records.throughput(result)
            if value is None:
                continue
            lat = [records.latency(result, op, "p99") for op in result.get("operations") or {}]
            p99 = max((p for p in lat if p is not None), default=None)
            acc.setdefault(str(step.workload), []).append(
                (value, p99, records.step_seconds(result))
            )
    out = {}
    for w, vals in sorted(acc.items()):
        p99s: list[float] = [p for _, p, _ in vals if p is not None]
        out[w] = {
            "n": len(vals),
            "throughput": round(sum(t for t, _, _ in vals) / len(vals), 1),
            "p99Micros": round(sum(p99s) / len(p99s), 1) if p99s else None,
        }
        seconds = [s for _, _, s in vals if s is not None]
        if seconds:
            out[w]["seconds"] = round(sum(seconds) / len(seconds), 3)
    return out


def compact_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The comparison rows status keeps: what `mongobench compare` prints, without the samples."""
    keep = (
        "workload",
        "metric",
        "unit",
        "configuration",
        "baseline",
        "n",
        "mean",
        "ciLow",
        "ciHigh",
        "relative",
        "relativeCiLow",
        "relativeCiHigh",
        "delta",
        "p",
        "pAdjusted",
        "verdict",
        "flags",
        "validity",
    )
    return [{k: r[k] for k in keep if k in r and r[k] is not None} for r in rows]
