"""Is a step's throughput steady? Change points in its per-second series (ruptures' PELT).

A client records its throughput once per status interval (`series.throughput` in its result
document). A trial is steady when the series has one level from start to end. Two departures:

- warm-up: the changes in the first half of the series end a warm-up (caches filling, JIT
  compiling, connections opening); its end is placed by `warmup_end` (a ramp meeting a level,
  least squares), reported as `warmupSeconds`;
- level shift: a change in the second half (a neighbour, a checkpoint, throttling): reported
  as `shiftsSeconds`.
Either makes the series not steady; the operator decides what that means for the trial (a
short warm-up is reported only: spec.validity.maxWarmupFraction).

Method: PELT with a Gaussian mean-shift cost (l2; ruptures' KernelCPD with the linear kernel,
which is the same cost in C) on the series divided by a robust noise scale (the median
absolute deviation of first differences / sqrt 2: the series' own noise SD whatever its level
changes), so one penalty serves every throughput level. The penalty is `PENALTY_PER_LOG_N x
log(n)` on that unit-variance series, twice BIC's 2 log n per mean parameter. On simulated
series (30-300 points, per-second CV 3-15%, ramps of 3-20 s) penalties from 2 to 8 log n gave
the same figures within a point (false changes on steady series 0.4-1%, warm-ups found within
2 s 92-93% over all CVs: the size rule below, not the penalty, decides the false alarms); the
middle was kept. benchmarks/method_validity.py prints the figures. A change must also be
large to count: adjacent segments whose levels differ by less than `MIN_SHIFT` (relative) are
one level (a statistically real 1% wobble does not make a trial invalid), and segments shorter
than `MIN_SEGMENT` points are not looked for.

ruptures (and numpy, scipy) is an optional extra, `mongobench-results[steady]`, imported on
first use: the operator's image holds no numeric package; the runner in the client pods judges
its own series and writes the verdict into its document, where the operator reads it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from statistics import median
from typing import Any

PENALTY_PER_LOG_N = 4.0
MIN_SEGMENT = 3  # points: a change point is looked for no closer than this to another
MIN_SHIFT = 0.05  # relative level difference below which adjacent segments are one level
MIN_POINTS = 10  # shorter series are not judged (too few points to tell noise from change)
# The first and the last interval are partial: the first holds the clients' start within it,
# the last ends when the phase does, mid-interval (a duration-bounded step's last point was a
# third to a half of the level in every trial of the demo). Neither is a warm-up or a shift:
# the series is judged without them.
EDGE_POINTS = 1
# A first change within this share of the series ends a warm-up; later, it is a level shift.
WARMUP_MAX_SHARE = 0.5


@dataclass(frozen=True)
class Steadiness:
    """The verdict on one series; `judged` is False when it was too short to tell."""

    steady: bool
    warmup_seconds: float | None = None
    shifts_seconds: tuple[float, ...] = field(default_factory=tuple)
    levels: tuple[float, ...] = field(default_factory=tuple)  # each segment's mean
    points: int = 0
    interval_seconds: float = 1.0
    judged: bool = True

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "steady": self.steady,
            "judged": self.judged,
            "points": self.points,
            "intervalSeconds": self.interval_seconds,
            "method": f"PELT l2, penalty {PENALTY_PER_LOG_N:g} log n, min shift {MIN_SHIFT:.0%}",
        }
        if self.warmup_seconds is not None:
            out["warmupSeconds"] = self.warmup_seconds
        if self.shifts_seconds:
            out["shiftsSeconds"] = list(self.shifts_seconds)
        if self.levels:
            out["levels"] = [round(v, 1) for v in self.levels]
        return out

    def message(self) -> str:
        """Why it is not steady, in a sentence (empty when it is)."""
        parts = []
        if self.warmup_seconds is not None:
            parts.append(f"warm-up of {self.warmup_seconds:g} s")
        if self.shifts_seconds:
            at = ", ".join(f"{s:g} s" for s in self.shifts_seconds)
            parts.append(f"throughput level shift at {at}")
        return "; ".join(parts)


def noise_scale(values: Sequence[float]) -> float:
    """The series' noise SD, robust to level changes: MAD of first differences / sqrt(2)."""
    diffs = [b - a for a, b in pairwise(values)]
    if not diffs:
        return 0.0
    mid = median(diffs)
    mad = median(abs(d - mid) for d in diffs)
    return 1.4826 * mad / math.sqrt(2)


def change_points(
    values: Sequence[float], penalty_per_log_n: float = PENALTY_PER_LOG_N
) -> list[int]:
    """Indices where a new segment starts (0 < i < n), PELT on the noise-scaled series."""
    import numpy as np  # noqa: PLC0415 - the optional extra, see the module docstring
    import ruptures  # noqa: PLC0415

    n = len(values)
    scale = noise_scale(values)
    if n < 2 * MIN_SEGMENT or scale <= 0:
        return []
    signal = np.asarray(values, dtype=float) / scale
    # KernelCPD with the linear kernel is PELT with the l2 cost, in C (ruptures' Pelt class
    # computes the same in Python: 0.5 s for 300 points against 2 ms).
    algo = ruptures.KernelCPD(kernel="linear", min_size=MIN_SEGMENT, jump=1).fit(signal)
    breaks: list[int] = algo.predict(pen=penalty_per_log_n * math.log(n))
    return [int(b) for b in breaks[:-1]]  # the last "break" is n itself


def _merge_small(values: Sequence[float], breaks: list[int]) -> list[int]:
    """Drop change points between segments whose levels differ by less than MIN_SHIFT."""
    kept = list(breaks)
    changed = True
    while changed and kept:
        changed = False
        bounds = [0, *kept, len(values)]
        means = [_mean(values[a:b]) for a, b in pairwise(bounds)]
        smallest, at = math.inf, -1
        for i in range(len(kept)):
            ref = max(abs(means[i]), abs(means[i + 1]), 1e-9)
            rel = abs(means[i + 1] - means[i]) / ref
            if rel < smallest:
                smallest, at = rel, i
        if smallest < MIN_SHIFT:
            del kept[at]
            changed = True
    return kept


def warmup_end(values: Sequence[float], limit: int) -> int:
    """Where a warm-up ends: the hinge e minimising the squared error of a ramp that meets a
    constant level at e (y = level + slope x min(t - e, 0)). PELT's mean-shift segments cut a
    ramp into steps and put the last one where the ramp disappears in the noise, seconds early;
    the hinge places the end where the ramp meets the level. Least squares from prefix sums,
    O(n) for all e."""
    n = len(values)
    px = py = pxx = pxy = 0.0
    prefix = [(0.0, 0.0, 0.0, 0.0)]
    for i, y in enumerate(values):
        px, py, pxx, pxy = px + i, py + y, pxx + i * i, pxy + i * y
        prefix.append((px, py, pxx, pxy))
    sum_y = prefix[n][1]
    best, best_e = -math.inf, 0
    for e in range(2, min(limit, n - MIN_SEGMENT) + 1):
        ex, ey, exx, exy = prefix[e]
        # z = min(t - e, 0): nonzero for the first e points only.
        sz = ex - e * e
        szz = exx - 2 * e * ex + e * e * e
        szy = exy - e * ey
        szz_c = szz - sz * sz / n
        szy_c = szy - sz * sum_y / n
        explained = szy_c * szy_c / szz_c if szz_c > 0 else 0.0
        if explained > best:  # least error = most variance explained by the hinge
            best, best_e = explained, e
    return best_e


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def judge_series(values: Sequence[float], interval_seconds: float = 1.0) -> Steadiness:
    """Warm-up and level shifts of one throughput series (ops/s per interval)."""
    if len(values) < MIN_POINTS:
        return Steadiness(True, points=len(values), interval_seconds=interval_seconds, judged=False)
    verdict = _judge_whole(values[EDGE_POINTS : len(values) - EDGE_POINTS], interval_seconds)
    # Times from the series' own start again (the first interval was set aside).
    edge = EDGE_POINTS * interval_seconds
    return replace(
        verdict,
        warmup_seconds=None if verdict.warmup_seconds is None else verdict.warmup_seconds + edge,
        shifts_seconds=tuple(t + edge for t in verdict.shifts_seconds),
        points=len(values),
    )


def _judge_whole(values: Sequence[float], interval_seconds: float) -> Steadiness:
    """judge_series on a series without partial intervals."""
    n = len(values)
    breaks = change_points(values)
    breaks = _merge_small(values, breaks)
    bounds = [0, *breaks, n]
    levels = tuple(_mean(values[a:b]) for a, b in pairwise(bounds))
    # The changes early in the series end a warm-up (a ramp is found as a few steps: the last
    # of them is where the series settled); later ones are level shifts.
    early = [b for b in breaks if b <= n * WARMUP_MAX_SHARE]
    shifts = [b for b in breaks if b > n * WARMUP_MAX_SHARE]
    if early and levels[0] >= levels[len(early)]:
        # An early change that lowers the throughput is no warm-up (a warm-up speeds up): a
        # level shift, said as one.
        shifts, early = [*early, *shifts], []
    warmup = None
    if early:
        settled_until = shifts[0] if shifts else n
        warmup = warmup_end(values[:settled_until], limit=int(n * WARMUP_MAX_SHARE)) * (
            interval_seconds
        )
    steady = not shifts and warmup is None
    return Steadiness(
        steady=steady,
        warmup_seconds=warmup,
        shifts_seconds=tuple(b * interval_seconds for b in shifts),
        levels=levels,
        points=n,
        interval_seconds=interval_seconds,
    )
