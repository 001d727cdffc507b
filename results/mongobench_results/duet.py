"""The paired comparison of a duet (BenchmarkExperiment order Duet): A and B ran at once, side
by side on the same nodes, their clients started at one barrier instant, so second i of A and
second i of B saw the same machine. Noise both sides share (a neighbour, steal, a slow disk)
moves both and cancels in their ratio, which is what makes a duet more accurate than trials run
one after the other (Bulej et al., ICPE 2020).

- A *pair* is one measured step (a workload) of one round, on both sides. Its intervals pair by
  index: both series start at the same instant.
- Per pair, the estimate is the mean of the intervals' log ratios log(B_i / A_i) (throughput;
  for latency the intervals' mean latencies). Intervals within a step are autocorrelated, so
  the interval is not made from them as if independent:
  - two rounds or more: a Student t interval over the rounds' estimates (each round one paired
    observation, as in any paired design);
  - one round: a moving-block bootstrap of its intervals (blocks of BLOCK_SECONDS), seeded so
    a table prints the same twice.
  Reported as the relative change of B against A, exp(mean) - 1, with its interval.
- The verdict says "no difference" unless the interval excludes 0 (then B is "faster" or
  "slower": higher throughput, lower latency is faster).
- A pair is valid (DuetValidity) when both sides succeeded, started within MAX_START_SKEW_S of
  each other, ran the whole window (interval counts within WINDOW_TOLERANCE) and neither was
  starved by the other: the smaller side's share of the two sides' CPU is said, and below
  MIN_CPU_SHARE the pair is invalid. Invalid pairs are listed, not compared.

Pure: run objects (as the API or the archive holds them) in, figures out.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from mongobench_results import records, stats

METHOD = "paired per-interval log ratios: t over rounds (one round: moving-block bootstrap)"
BLOCK_SECONDS = 5
MAX_START_SKEW_S = 1.0
WINDOW_TOLERANCE = 0.05  # the sides' interval counts may differ by this share (at least 2)
MIN_CPU_SHARE = 0.2  # the smaller side's share of both sides' CPU below this: starved
# Why a pair is left out (the reasons of the DuetValid condition).
NOT_PAIRED, NOT_TOGETHER, SHORT_SIDE, STARVED = "NotPaired", "NotTogether", "ShortSide", "Starved"
ALL_PAIRED = "AllPaired"
FASTER, SLOWER, NO_DIFFERENCE = "faster", "slower", "no difference"
METRICS = {"throughput": ("throughput", True), "latency": ("latencyAvgUs", False)}


@dataclass(frozen=True)
class Side:
    run: str
    series: Mapping[str, Any] | None  # the step's result.series
    start: str | None  # the barrier instant the clients started at (result.startAt)
    cpu_cores: float | None  # the side's pods' mean CPU over the step (every role)
    succeeded: bool


@dataclass(frozen=True)
class Pair:
    duet: str  # the round's pair name
    workload: str
    a: Side
    b: Side
    problems: tuple[tuple[str, str], ...] = ()  # (reason, message)
    cpu_share: float | None = None  # the smaller side's share of the two sides' CPU

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def intervals(self) -> tuple[int, int]:
        return (_length(self.a.series), _length(self.b.series))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "duet": self.duet,
            "workload": self.workload,
            "runs": [self.a.run, self.b.run],
            "intervals": list(self.intervals),
            "valid": self.valid,
        }
        if self.cpu_share is not None:
            out["cpuShare"] = round(self.cpu_share, 3)
        if self.problems:
            out["reasons"] = [{"reason": r, "message": m} for r, m in self.problems]
        return out


@dataclass(frozen=True)
class Row:
    workload: str
    metric: str
    rounds: int  # valid pairs compared
    intervals: int  # interval pairs behind them
    change: float | None  # B against A, relative (0.05: +5%)
    low: float | None
    high: float | None
    verdict: str

    def to_dict(self) -> dict[str, Any]:
        def pct(x: float | None) -> float | None:
            return None if x is None else round(100 * x, 2)

        return {
            "workload": self.workload,
            "metric": self.metric,
            "rounds": self.rounds,
            "intervals": self.intervals,
            "changePercent": pct(self.change),
            "lowPercent": pct(self.low),
            "highPercent": pct(self.high),
            "verdict": self.verdict,
        }


@dataclass(frozen=True)
class Result:
    baseline: str  # side A's label
    other: str  # side B's label
    rows: tuple[Row, ...]
    pairs: tuple[Pair, ...]
    confidence: float = stats.DEFAULT_CONFIDENCE
    method: str = METHOD
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "other": self.other,
            "confidence": self.confidence,
            "method": self.method,
            "rows": [r.to_dict() for r in self.rows],
            "pairs": [p.to_dict() for p in self.pairs],
            "validPairs": sum(1 for p in self.pairs if p.valid),
            "notes": list(self.notes),
        }


def _length(series: Mapping[str, Any] | None) -> int:
    return len((series or {}).get("throughput") or ())


def _cpu(step: records.StepView) -> float | None:
    """The side's pods' mean CPU cores over the step, every role added (None: not measured)."""
    roles = step.roles or {}
    cores = [
        (r.get("sum") or {}).get("cpuCores")
        for name, r in roles.items()
        if isinstance(r, Mapping) and name != "missing"
    ]
    known = [float(c) for c in cores if c is not None]
    return sum(known) if known else None


def _side(run: Mapping[str, Any], step: records.StepView | None) -> Side:
    name = str(run["metadata"]["name"])
    if step is None:
        return Side(name, None, None, None, False)
    result = step.result or {}
    return Side(
        name,
        result.get("series"),
        result.get("startAt"),
        _cpu(step),
        step.phase == "Succeeded",
    )


def _measured(run: Mapping[str, Any]) -> dict[str, records.StepView]:
    """The run's measured steps by workload: the first attempt (the one its partner met)."""
    out: dict[str, records.StepView] = {}
    for s in records.steps(run):
        if s.kind == "run" and s.workload and s.validity.attempt <= 1:
            out.setdefault(str(s.workload), s)
    return out


def pairs(runs: Iterable[Mapping[str, Any]]) -> list[Pair]:
    """The duet pairs of these runs (by spec.duet: the pair's name and side), judged."""
    by_duet: dict[str, dict[int, Mapping[str, Any]]] = {}
    for run in runs:
        duet = (run.get("spec") or {}).get("duet")
        if duet:
            by_duet.setdefault(str(duet["name"]), {})[int(duet["side"])] = run
    out = []
    for name in sorted(by_duet, key=_round_order):
        sides = by_duet[name]
        if 0 not in sides or 1 not in sides:
            continue
        a, b = _measured(sides[0]), _measured(sides[1])
        for workload in sorted(set(a) | set(b)):
            pair = Pair(
                name, workload, _side(sides[0], a.get(workload)), _side(sides[1], b.get(workload))
            )
            out.append(judge(pair))
    return out


def _round_order(name: str) -> tuple[str, int]:
    """`x-r10` after `x-r9`."""
    stem, _, r = name.rpartition("-r")
    return (stem, int(r)) if r.isdigit() else (name, 0)


def _instant(text: str | None) -> datetime | None:
    return records.parse_time(text) if text else None


def judge(pair: Pair) -> Pair:
    """The pair with its validity problems and its CPU share (see the module's rules)."""
    problems: list[tuple[str, str]] = []
    a, b = pair.a, pair.b
    if not (a.succeeded and b.succeeded and _length(a.series) and _length(b.series)):
        problems.append((NOT_PAIRED, "a side did not succeed or reported no per-second series"))
    start_a, start_b = _instant(a.start), _instant(b.start)
    if start_a is None or start_b is None:
        problems.append((NOT_TOGETHER, "a side has no barrier start instant"))
    elif (skew := abs((start_a - start_b).total_seconds())) > MAX_START_SKEW_S:
        problems.append((NOT_TOGETHER, f"the sides started {skew:.1f} s apart"))
    na, nb = _length(a.series), _length(b.series)
    if max(na, nb) - min(na, nb) > max(2, WINDOW_TOLERANCE * max(na, nb)):
        problems.append((SHORT_SIDE, f"the sides ran {na} and {nb} intervals: one stopped early"))
    share = None
    if a.cpu_cores is not None and b.cpu_cores is not None and a.cpu_cores + b.cpu_cores > 0:
        share = min(a.cpu_cores, b.cpu_cores) / (a.cpu_cores + b.cpu_cores)
        if share < MIN_CPU_SHARE:
            problems.append(
                (
                    STARVED,
                    f"the smaller side had {100 * share:.0f}% of the pair's CPU "
                    f"(below {100 * MIN_CPU_SHARE:.0f}%)",
                )
            )
    return Pair(pair.duet, pair.workload, a, b, tuple(problems), share)


EDGE_INTERVALS = 1


def paired_intervals(
    a: Mapping[str, Any], b: Mapping[str, Any], key: str
) -> list[tuple[float, float]]:
    """(A_i, B_i) of every interval both sides measured in full (positive values only). Each
    side's first and last interval are partial (a client's start and end fall inside a second,
    not on the barrier's boundary), e.g. 176 against 14 ops/s: they are left out
    (EDGE_INTERVALS at each end), as they measure when a second began, not the configuration."""
    xs, ys = list(a.get(key) or ()), list(b.get(key) or ())
    n = min(len(xs), len(ys))
    return [
        (xs[i], ys[i])
        for i in range(EDGE_INTERVALS, n - EDGE_INTERVALS)
        if xs[i] is not None and ys[i] is not None and xs[i] > 0 and ys[i] > 0
    ]


def log_ratios(a: Mapping[str, Any], b: Mapping[str, Any], key: str) -> list[float]:
    """log(B_i / A_i) of the paired intervals."""
    return [math.log(y / x) for x, y in paired_intervals(a, b, key)]


def block_bootstrap(
    values: Sequence[float],
    confidence: float = stats.DEFAULT_CONFIDENCE,
    block: int = BLOCK_SECONDS,
    resamples: int = stats.BOOTSTRAP_RESAMPLES,
    seed: int = stats.BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """Percentile interval of the mean of an autocorrelated series: moving blocks of `block`
    consecutive values drawn with replacement (circular), as many as fill its length."""
    n = len(values)
    if n < 2 * block:
        return None
    rng = random.Random(seed)
    doubled = [*values, *values[:block]]
    sums = [math.fsum(doubled[i : i + block]) for i in range(n)]
    draws = -(-n // block)
    means = sorted(
        math.fsum(sums[rng.randrange(n)] for _ in range(draws)) / (draws * block)
        for _ in range(resamples)
    )
    tail = (1 - confidence) / 2
    return stats.percentile(means, tail), stats.percentile(means, 1 - tail)


def estimate(
    per_round: Sequence[Sequence[float]], confidence: float = stats.DEFAULT_CONFIDENCE
) -> tuple[float, float, float] | None:
    """(mean, low, high) of the log ratio over rounds, each round's intervals a list."""
    rounds = [r for r in per_round if r]
    if not rounds:
        return None
    means = [math.fsum(r) / len(r) for r in rounds]
    centre = math.fsum(means) / len(means)
    if len(means) >= 2:
        summary = stats.summarise(means, confidence)
        if summary.ci_low is None or summary.ci_high is None:
            return None
        return centre, summary.ci_low, summary.ci_high
    bounds = block_bootstrap(rounds[0], confidence)
    return None if bounds is None else (centre, *bounds)


def verdict(low: float, high: float, higher_is_faster: bool) -> str:
    if low <= 0 <= high:
        return NO_DIFFERENCE
    up = low > 0
    return FASTER if up == higher_is_faster else SLOWER


def compare(
    runs: Iterable[Mapping[str, Any]],
    baseline: str = "A",
    other: str = "B",
    confidence: float = stats.DEFAULT_CONFIDENCE,
) -> Result:
    """The paired table of a duet's runs: per workload and metric, B against A."""
    found = pairs(runs)
    valid = [p for p in found if p.valid]
    rows = []
    for workload in sorted({p.workload for p in found}):
        mine = [p for p in valid if p.workload == workload]
        for metric, (key, higher_is_faster) in METRICS.items():
            per_round = [log_ratios(p.a.series or {}, p.b.series or {}, key) for p in mine]
            n = sum(len(r) for r in per_round)
            if metric == "latency" and n == 0:
                continue  # no per-interval latency reported: throughput only
            got = estimate(per_round, confidence)
            if got is None:
                rows.append(Row(workload, metric, len(mine), n, None, None, None, "too few pairs"))
                continue
            centre, low, high = got
            rows.append(
                Row(
                    workload,
                    metric,
                    sum(1 for r in per_round if r),
                    n,
                    math.expm1(centre),
                    math.expm1(low),
                    math.expm1(high),
                    verdict(low, high, higher_is_faster),
                )
            )
    notes = []
    if len(valid) < len(found):
        notes.append(f"{len(found) - len(valid)} of {len(found)} pairs invalid, left out")
    return Result(baseline, other, tuple(rows), tuple(found), confidence, notes=tuple(notes))


def validity_condition(result: Result) -> tuple[Literal["True", "False", "Unknown"], str, str]:
    """(status, reason, message) of the DuetValid condition."""
    bad = [p for p in result.pairs if not p.valid]
    if not result.pairs:
        return "Unknown", NOT_PAIRED, "no pair of measured steps yet"
    if not bad:
        shares = [p.cpu_share for p in result.pairs if p.cpu_share is not None]
        said = f"; smaller side's CPU share {100 * min(shares):.0f}% at least" if shares else ""
        return "True", ALL_PAIRED, f"all {len(result.pairs)} pairs valid{said}"
    first = bad[0]
    reason, message = first.problems[0]
    where = f"{first.duet} {first.workload}"
    return "False", reason, f"{len(bad)} of {len(result.pairs)} pairs invalid; {where}: {message}"
