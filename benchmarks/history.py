"""make bench-history: change points across an archive's history, on a synthetic truth.

A synthetic archive (a folder, written by the archive's own writer) of 500 runs, each measuring
workloads a-e once; each workload's throughput is its own series, with 5% shifts (up or down)
injected at random runs (at least 25 runs apart) and 2% noise (CV) on every point. Then
`mongobench history`'s own code (mongobench_results.history.update_archive, what the CLI calls)
builds the series and finds the change points, with Otava's documented defaults unless
BENCH_MAX_PVALUE / BENCH_WINDOW say otherwise. Repeated over BENCH_SEEDS archives (default 3).

Figures:
- shifts found within 3 runs of where they were injected, in % of all injected shifts;
- false changes (found more than 3 runs from any injected shift) per 100 runs of a series;
- update at 500 points: a 501st run archived, then the update (read the cache, list the
  archive's manifests, read the new run, append, pass every series in full, write the cache and
  the Grafana export) timed end to end; the change-point pass alone beside it.
- the knee spread is make bench-knee's (benchmarks/knee_spread.py; BENCH_KNEE=0 skips it).

No assertion: it prints the figures and, last, one line joining them.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mongobench_archive import Root, open_root
from mongobench_results import history

RUNS = 500
WORKLOADS = ("a", "b", "c", "d", "e")
SHIFT = 0.05
CV = 0.02
MIN_GAP = 25
SHIFTS_PER_SERIES = 8
TOLERANCE = 3
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def shift_points(rng: random.Random) -> list[int]:
    while True:
        at = sorted(rng.sample(range(MIN_GAP, RUNS - MIN_GAP), SHIFTS_PER_SERIES))
        if all(b - a >= MIN_GAP for a, b in itertools.pairwise(at)):
            return at


def series_values(rng: random.Random, shifts: list[int], n: int) -> list[float]:
    level, out = 10_000.0, []
    for i in range(n):
        if i in shifts:
            level *= 1 + SHIFT if rng.random() < 0.5 else 1 - SHIFT
        out.append(level * (1 + CV * rng.gauss(0, 1)))
    return out


def run_object(i: int, throughputs: dict[str, float]) -> dict[str, Any]:
    return {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {"name": f"nightly-{i:04d}", "namespace": "bench", "uid": f"uid-{i:04d}"},
        "spec": {"driver": "ycsb"},
        "status": {
            "phase": "Succeeded",
            "startTime": (T0 + timedelta(hours=6 * i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "clusterSnapshot": {"topology": {"type": "ReplicaSet", "replicaSet": {"members": 3}}},
            "steps": [
                {
                    "index": 2 + k,
                    "kind": "run",
                    "workload": w,
                    "repetition": 1,
                    "phase": "Succeeded",
                    "result": {"throughput": tp, "operations": {}},
                }
                for k, (w, tp) in enumerate(throughputs.items())
            ],
        },
    }


def write(root: Root, i: int, values: dict[str, list[float]]) -> None:
    obj = run_object(i, {w: v[i] for w, v in values.items()})
    w = root.writer("bench", obj["metadata"]["name"], obj["metadata"]["uid"])
    w.put_manifest(obj, "Succeeded", True)


def one_archive(seed: int, folder: Path, method: history.Method) -> dict[str, float]:
    rng = random.Random(seed)
    truth = {w: shift_points(rng) for w in WORKLOADS}
    values = {w: series_values(rng, truth[w], RUNS + 1) for w in WORKLOADS}
    root = open_root(str(folder))
    for i in range(RUNS):
        write(root, i, values)
    u = history.update_archive(root, (), ["throughput"], method)  # first build: the cache
    found = false = 0
    for c in u.changes:
        shifts = truth[c.series.get("workload")]
        if not any(abs(c.index - s) <= TOLERANCE for s in shifts):
            false += 1
    for w in WORKLOADS:
        idx = [c.index for c in u.changes if c.series.get("workload") == w]
        found += sum(any(abs(i - s) <= TOLERANCE for i in idx) for s in truth[w])
    # The 501st run: the update a new run costs, end to end, from the cache.
    write(root, RUNS, values)
    t = time.perf_counter()
    u = history.update_archive(root, (), ["throughput"], method)
    update = time.perf_counter() - t
    assert u.new_runs == 1 and u.from_cache  # the figure is the incremental path's
    t = time.perf_counter()
    history.detect(u.history.series[next(iter(u.history.series))].values(), method)
    detect = time.perf_counter() - t
    return {
        "shifts": SHIFTS_PER_SERIES * len(WORKLOADS),
        "found": found,
        "false": false,
        "points": RUNS * len(WORKLOADS),
        "update": update,
        "detect": detect,
    }


def knee_spread() -> str:
    """The knee figure of make bench-knee (benchmarks/knee_spread.py: three searches on the
    local plane, minutes), unless BENCH_KNEE=0 asks for the change-point figures alone."""
    if os.environ.get("BENCH_KNEE", "1") == "0":
        return "knee spread not measured (BENCH_KNEE=0)"
    path = Path(__file__).with_name("knee_spread.py")
    spec = importlib.util.spec_from_file_location("knee_spread", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return f"knee spread {float(module.knee_spread()):.1f}%"


def main() -> None:
    seeds = int(os.environ.get("BENCH_SEEDS", "3"))
    method = history.Method(
        max_pvalue=float(os.environ.get("BENCH_MAX_PVALUE", history.Method.max_pvalue)),
        window=int(os.environ.get("BENCH_WINDOW", history.Method.window)),
    )
    history.detect([1.0, 2.0, 1.0, 2.0, 1.0])  # import Otava and scipy before timing anything
    print(
        f"bench-history: {seeds} synthetic archives of {RUNS} runs x {len(WORKLOADS)} workloads, "
        f"{SHIFTS_PER_SERIES} shifts of {SHIFT:.0%} per series at CV {CV:.0%}; Otava E-Divisive "
        f"means, p < {method.max_pvalue:g}, window {method.window}",
        flush=True,
    )
    results = []
    for seed in range(1, seeds + 1):
        with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp:
            r = one_archive(seed, Path(tmp), method)
        results.append(r)
        print(
            f"  archive {seed}: shifts found {r['found']}/{r['shifts']} within {TOLERANCE} runs, "
            f"false changes {r['false']} in {r['points']} points, update {r['update']:.3f} s "
            f"(change-point pass of one series {1000 * r['detect']:.1f} ms)",
            flush=True,
        )
    found = 100 * sum(r["found"] for r in results) / sum(r["shifts"] for r in results)
    false = 100 * sum(r["false"] for r in results) / sum(r["points"] for r in results)
    update = statistics.median(r["update"] for r in results)
    print(
        "  targets: >= 90% found within 3 runs, <= 1 false change per 100 runs, update < 1 s "
        "(the update lists every manifest of the archive: a local folder here)"
    )
    print(
        f"bench-history: shifts found {found:.1f}% within {TOLERANCE} runs, false changes "
        f"{false:.1f} per 100 runs, update {update:.2f} s at {RUNS} points, {knee_spread()}"
    )


if __name__ == "__main__":
    sys.exit(main())
