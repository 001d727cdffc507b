"""Results of a step: every client's document read back from its ConfigMaps, merged exactly.

Each client writes `<prefix>-c<index>-p<part>` ConfigMaps (data key `result.json`, parts
concatenated in order; labels mongobench.io/result-of, part, parts). Nothing here depends on pod
logs. Merging sums the clients' HDR histograms (mongobench_runner.merge, the same code the runner
ships), so aggregate percentiles are exact.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mongobench_runner.merge import merge_documents

RESULT_OF = "mongobench.io/result-of"
PART = "mongobench.io/part"
PARTS = "mongobench.io/parts"


@dataclass(frozen=True)
class Collected:
    documents: list[dict[str, Any]]  # one per client that reported completely, by index
    missing: list[int]  # client indexes without a complete document


def assemble(configmaps: Iterable[Mapping[str, Any]], prefix: str, clients: int) -> Collected:
    """Pure: reassemble each client's document from its parts; incomplete ones are missing."""
    parts: dict[str, dict[int, str]] = {}
    expected: dict[str, int] = {}
    for cm in configmaps:
        labels = cm["metadata"].get("labels") or {}
        owner = labels.get(RESULT_OF, "")
        if not owner.startswith(f"{prefix}-c"):
            continue
        parts.setdefault(owner, {})[int(labels.get(PART, 0))] = (cm.get("data") or {}).get(
            "result.json", ""
        )
        expected[owner] = int(labels.get(PARTS, 1))
    documents: list[dict[str, Any]] = []
    missing: list[int] = []
    for index in range(clients):
        owner = f"{prefix}-c{index}"
        got = parts.get(owner, {})
        if not got or len(got) != expected.get(owner):
            missing.append(index)
            continue
        documents.append(json.loads("".join(got[i] for i in sorted(got))))
    return Collected(documents, missing)


def merge(documents: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return dict(merge_documents([dict(d) for d in documents]))


def step_result(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The compact per-step entry kept in status (the full documents stay in ConfigMaps)."""
    ops = {}
    for name, op in sorted((doc.get("operations") or {}).items()):
        lat = op.get("latencyUs") or {}
        ops[name] = {
            "count": op.get("count", 0),
            "errors": op.get("errors", 0),
            **{k: _round(lat.get(k)) for k in ("avg", "p50", "p95", "p99", "p999", "max")},
        }
    sanity = (doc.get("sanity") or {}).get("littlesLaw") or {}
    return {
        "status": doc.get("status"),
        "error": doc.get("error") or None,
        "throughput": _round(doc.get("throughput")),
        "runtimeSeconds": _round(doc.get("runtimeSeconds")),
        "operationsTotal": doc.get("operationsTotal"),
        "clients": len(doc.get("clients") or []) or 1,
        "operations": ops,
        "latencyUnit": "us",
        "littlesLaw": {"ratio": _round(sanity.get("ratio")), "ok": sanity.get("ok")},
        "warnings": list((doc.get("sanity") or {}).get("warnings") or [])[:5],
    }


def summarise(steps: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per workload over its measured repetitions: mean, SD and n of throughput and of each
    operation's mean and p99 latency (SD is the sample SD; n=1 has none)."""
    by_workload: dict[str, list[Mapping[str, Any]]] = {}
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
