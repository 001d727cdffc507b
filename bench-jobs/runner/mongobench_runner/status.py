"""Parser of YCSB's `-s` status lines (printed every `status.interval` seconds on stderr).

    2026-11-22 05:45:30:214 1 sec: 68 operations; 67.93 current ops/sec; est completion in 14
    seconds [READ: Count=41, Max=70975, Min=2962, Avg=18910.71, 90=33535, 99=70975, 99.9=70975,
    99.99=70975] [UPDATE: Count=29, ...]

Counts and latencies in brackets cover the last interval only (YCSB resets its interval
histogram at every status line); `operations` is the running total.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from hdrh.histogram import HdrHistogram

_HEAD = re.compile(
    r"^(?:(?P<label>.*?))?(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}:\d{3}) "
    r"(?P<elapsed>\d+) sec: (?P<ops>\d+) operations;"
    r"(?: (?P<rate>[\d.]+|NaN|Infinity) current ops/sec;)?"
)
_BLOCK = re.compile(r"\[(?P<name>[A-Za-z0-9_\-]+): (?P<body>[^\]]*)\]")
_KV = re.compile(r"(?P<k>[\w.]+)=(?P<v>-?[\d.]+|NaN)")


@dataclass(frozen=True)
class IntervalStats:
    count: int
    min_us: float
    max_us: float
    avg_us: float
    p90_us: float
    p99_us: float
    p999_us: float
    p9999_us: float


@dataclass(frozen=True)
class StatusLine:
    timestamp: str
    elapsed_s: int
    total_ops: int
    current_ops_per_s: float | None
    operations: dict[str, IntervalStats] = field(default_factory=dict)


def _num(text: str) -> float:
    # YCSB formats numbers in the JVM's default locale: the runner starts it with an English one.
    return float(text)


def parse_status_line(line: str) -> StatusLine | None:
    """The parsed line, or None for any other output line."""
    m = _HEAD.search(line)
    if m is None:
        return None
    rate_text = m.group("rate")
    rate = _num(rate_text) if rate_text is not None else None
    ops: dict[str, IntervalStats] = {}
    for block in _BLOCK.finditer(line, m.end()):
        values = {kv.group("k"): _num(kv.group("v")) for kv in _KV.finditer(block.group("body"))}
        if "Count" not in values:
            continue
        ops[block.group("name")] = IntervalStats(
            count=int(values["Count"]),
            min_us=values.get("Min", 0.0),
            max_us=values.get("Max", 0.0),
            avg_us=values.get("Avg", 0.0),
            p90_us=values.get("90", 0.0),
            p99_us=values.get("99", 0.0),
            p999_us=values.get("99.9", 0.0),
            p9999_us=values.get("99.99", 0.0),
        )
    return StatusLine(
        timestamp=m.group("ts"),
        elapsed_s=int(m.group("elapsed")),
        total_ops=int(m.group("ops")),
        current_ops_per_s=rate,
        operations=ops,
    )


def format_status_line(
    now: datetime,
    elapsed_s: int,
    total_ops: int,
    ops_per_s: float,
    operations: Mapping[str, IntervalStats],
) -> str:
    """A status line in YCSB's format, as the Locust driver prints one every `status.interval`
    (so both drivers feed the same live metrics through `parse_status_line`)."""
    ts = now.strftime("%Y-%m-%d %H:%M:%S:") + f"{now.microsecond // 1000:03d}"
    blocks = [
        f"[{name}: Count={s.count}, Max={s.max_us:g}, Min={s.min_us:g}, Avg={s.avg_us:.2f}, "
        f"90={s.p90_us:g}, 99={s.p99_us:g}, 99.9={s.p999_us:g}, 99.99={s.p9999_us:g}]"
        for name, s in sorted(operations.items())
    ]
    return (
        f"{ts} {elapsed_s} sec: {total_ops} operations; {ops_per_s:.2f} current ops/sec; "
        + " ".join(blocks)
    )


def interval_stats(h: HdrHistogram) -> IntervalStats:
    """A status line's figures of one interval's histogram (YCSB prints 90/99/99.9/99.99)."""
    if h.get_total_count() == 0:
        return IntervalStats(0, 0, 0, 0.0, 0, 0, 0, 0)
    return IntervalStats(
        count=int(h.get_total_count()),
        min_us=float(h.get_min_value()),
        max_us=float(h.get_max_value()),
        avg_us=float(h.get_mean_value()),
        p90_us=float(h.get_value_at_percentile(90)),
        p99_us=float(h.get_value_at_percentile(99)),
        p999_us=float(h.get_value_at_percentile(99.9)),
        p9999_us=float(h.get_value_at_percentile(99.99)),
    )
