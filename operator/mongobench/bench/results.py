"""Results of a step: every client's document read back from its ConfigMaps, merged exactly.

Each client writes `<prefix>-c<index>-p<part>` ConfigMaps (data key `result.json`, parts
concatenated in order; labels mongobench.io/result-of, result-set, part, parts). Nothing here
depends on pod logs. Merging sums the clients' HDR histograms (mongobench_runner.merge, the
same code the runner ships), so aggregate percentiles are exact.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mongobench.k8s.conditions import STEP_SUCCEEDED
from mongobench_runner import sinks
from mongobench_runner.merge import merge_documents

# The reassembly lives beside the writer (the runner's ConfigMap sink); the CLI uses it too.
RESULT_OF = sinks.LABEL_RESULT
RESULT_SET = sinks.LABEL_RESULT_SET
Collected = sinks.Collected
assemble = sinks.assemble


def set_selector(prefixes: Iterable[str]) -> str:
    """The label selector of these steps' result ConfigMaps (by result prefix)."""
    return f"{RESULT_SET} in ({','.join(sorted(set(prefixes)))})"


def complete(
    configmaps: Iterable[Mapping[str, Any]], prefixes: Iterable[str], clients: int
) -> bool:
    """Every client of every one of these steps reported (no document decoded)."""
    found = list(configmaps)
    return all(not sinks.missing_clients(found, prefix, clients) for prefix in prefixes)


def merge(documents: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return dict(merge_documents([dict(d) for d in documents]))


# Status keeps per-client figures while steps x clients stays under this; beyond it they stay in
# the result documents only (the status says so), so a 200-step x 64-client run still fits.
PER_CLIENT_BUDGET = 400
STATUS_WARNINGS = 10


def step_result(doc: Mapping[str, Any], per_client: bool = True) -> dict[str, Any]:
    """The per-step entry kept in status (the full documents stay in ConfigMaps and the
    archive). Every figure is recomputable from the others: throughput = operationsTotal /
    window.seconds = operationsTotal / runtimeSeconds."""
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
    operation's mean and p99 latency (SD is the sample SD; n=1 has none)."""
    by_workload: dict[str, list[Mapping[str, Any]]] = {}
    for step in steps:
        if step.get("kind") == "run" and step.get("phase") == STEP_SUCCEEDED and step.get("result"):
            by_workload.setdefault(str(step["workload"]), []).append(step["result"])
    out = []
    for workload, results in by_workload.items():
        entry: dict[str, Any] = {
            "workload": workload,
            "n": len(results),
            "throughput": _stats([r["throughput"] for r in results]),
            "operations": {},
        }
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
    if not values:
        return {"mean": None, "sd": None, "n": 0}
    sd = statistics.stdev(values) if len(values) > 1 else None
    return {"mean": _round(statistics.fmean(values)), "sd": _round(sd), "n": len(values)}


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 3) if math.isfinite(value) else None
    return value
