"""The client's throughput series for its result document, and its steadiness.

The driver's status lines (YCSB's `-s`, the Locust driver's lines in the same format) give
the throughput of every status interval; the document keeps them as a compact list and the
verdict of `mongobench_results.steady` on them (warm-up, level shifts). The client judges its
own series because the change-point method needs numpy and ruptures, which the operator's image
does not hold; the operator reads the verdict (benchmarkrun.decide.validity).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from statistics import median
from typing import Any

from mongobench_results import steady


def interval_seconds(points: Sequence[tuple[int, float]]) -> float:
    """The status interval the points were printed at (the median step; 1 s when unknown)."""
    steps = [b[0] - a[0] for a, b in pairwise(points) if b[0] > a[0]]
    return float(median(steps)) if steps else 1.0


def series_fields(
    points: Sequence[tuple[int, float]], latency: Mapping[int, float] | None = None
) -> dict[str, Any]:
    """build_document's `series` and `steadiness`; none without any status line. `latency`:
    the mean latency (us) at the points' instants, kept beside the throughput (None where an
    interval had no operation)."""
    if not points:
        return {}
    interval = interval_seconds(points)
    values = [max(v, 0.0) for _, v in points]
    series: dict[str, Any] = {
        "intervalSeconds": interval,
        "startSeconds": points[0][0],
        "throughput": [round(v, 1) for v in values],
    }
    if latency:
        series["latencyAvgUs"] = [latency.get(t) for t, _ in points]
    return {"series": series, "steadiness": steady.judge_series(values, interval).to_dict()}
