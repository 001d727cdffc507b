"""HDR histograms of operation latencies (microseconds): read YCSB's logs, encode, summarise.

Everything that computes a statistic from a histogram goes through `summarise`, which follows the
Java HdrHistogram 2.1.12 definitions YCSB itself uses (percentile = highest equivalent value of
the first bucket whose cumulative count reaches ceil(p/100 * total); mean over bucket medians), so
the result documents' numbers equal YCSB's own export and merged client histograms give exact
aggregate percentiles. Only the PyPI `hdrhistogram` package and the standard library are used.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

LOWEST_US = 1
HIGHEST_US = 3_600_000_000  # one hour
SIGNIFICANT_FIGURES = 3
PERCENTILES = (50.0, 95.0, 99.0, 99.9)


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_FIGURES)


def read_ycsb_log(path: Path) -> HdrHistogram:
    """The sum of every interval histogram in one YCSB `hdrhistogram.fileoutput` log."""
    total = new_histogram()
    reader = HistogramLogReader(str(path), new_histogram())
    while True:
        interval = reader.get_next_interval_histogram()
        if interval is None:
            break
        add(total, interval)
    reader.close()
    return total


def add(into: HdrHistogram, other: HdrHistogram) -> None:
    """into += other, bucket by bucket (exact; independent of the library's min/max tracking)."""
    if other.get_total_count() == 0:
        return
    for index in range(other.counts_len):
        n = other.get_count_at_index(index)
        if n:
            into.record_value(other.get_value_from_index(index), n)


def encode(h: HdrHistogram) -> str:
    """Base64 of the compressed V2 HDR payload (readable by Java/Go/Python HdrHistogram)."""
    data = h.encode()
    return data.decode("ascii") if isinstance(data, bytes) else str(data)


def decode(payload: str) -> HdrHistogram:
    return merge_encoded([payload])


def merge_encoded(payloads: Iterable[str]) -> HdrHistogram:
    """The sum of encoded histograms, decoded one at a time: two histograms (~180 KiB of
    buckets each) alive at most, however many clients (the operator merges steps on up to
    MONGOBENCH_WORKERS threads at once)."""
    total = new_histogram()
    for payload in payloads:
        add(total, HdrHistogram.decode(payload))
    return total


def merge(histograms: list[HdrHistogram]) -> HdrHistogram:
    total = new_histogram()
    for h in histograms:
        add(total, h)
    return total


@dataclass(frozen=True)
class Summary:
    count: int
    min: int
    max: int
    avg: float
    p50: int
    p95: int
    p99: int
    p999: int


def _value_at(h: HdrHistogram, index: int, highest: bool) -> int:
    value = int(h.get_value_from_index(index))
    return int(
        h.get_highest_equivalent_value(value) if highest else h.get_lowest_equivalent_value(value)
    )


def summarise(h: HdrHistogram) -> Summary:
    """count/min/max/mean/percentiles in one pass over the buckets (Java HdrHistogram semantics)."""
    total = 0
    for index in range(h.counts_len):
        total += h.get_count_at_index(index)
    if total == 0:
        return Summary(0, 0, 0, 0.0, 0, 0, 0, 0)
    targets = [max(math.ceil(math.nextafter(p, -math.inf) / 100.0 * total), 1) for p in PERCENTILES]
    found: list[int | None] = [None] * len(PERCENTILES)
    cumulative = 0
    weighted = 0
    first = last = -1
    for index in range(h.counts_len):
        n = h.get_count_at_index(index)
        if not n:
            continue
        if first < 0:
            first = index
        last = index
        cumulative += n
        low = _value_at(h, index, highest=False)
        high = _value_at(h, index, highest=True)
        weighted += n * (low + (high - low + 1) // 2)
        for i, target in enumerate(targets):
            if found[i] is None and cumulative >= target:
                found[i] = high
    p = [v if v is not None else 0 for v in found]
    return Summary(
        count=total,
        min=_value_at(h, first, highest=False),
        max=_value_at(h, last, highest=True),
        avg=weighted / total,
        p50=p[0],
        p95=p[1],
        p99=p[2],
        p999=p[3],
    )
