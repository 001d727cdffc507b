"""The saturation knee (pure): the highest offered load whose named latency percentile stays
under a limit, found with fewer probes than a fixed grid of the same resolution.

One function decides the search from the probes measured so far (`search`), so the operator
(a BenchmarkRun with `spec.knee` adds one probe step at a time, like repeatUntil adds
repetitions), the CLI's report and the knee benchmark replay it the same way:

- bracketing: from `start`, double the offered load until a probe fails or `maximum` passes;
- bisection: between the highest passing load and the lowest failing one, until they are
  within `resolution` of each other (relative: 0.05 is 5%);
- noise: a probe is judged on one sample when its percentile (and its achieved load) is
  clearly on one side of the limit; a probe within `boundary` of the limit (or whose achieved
  share is within `achieved_boundary` of `min_achieved`) is repeated at the same load and
  judged by the majority of `boundary_samples`;
- a probe passes when the percentile (the worst of the workload's operations) is at or under
  the limit and the achieved load is at least `min_achieved` of the offered one (a closed-loop
  client that cannot keep up is saturated even when its latency looks fine);
- then `repetitions` trials at the knee give its confidence interval (stats.summarise).

The comparison is a geometric grid from `start` to `maximum` with ratio 1 + resolution, the
grid that needs the fewest points for that resolution.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mongobench_results import records, stats

PERCENTILES = ("p50", "p95", "p99", "p999")


@dataclass(frozen=True)
class Target:
    """What the search looks for and how finely (spec.knee)."""

    percentile: str  # p50, p95, p99, p999
    limit_ms: float
    start: float  # ops/s
    maximum: float  # ops/s
    resolution: float = 0.05
    repetitions: int = 3
    min_achieved: float = 0.9  # achieved / offered at or above which the load was carried
    boundary: float = 0.1  # |percentile / limit - 1| within which one sample does not decide
    # |achieved / offered - min_achieved| within which one sample does not decide: narrower,
    # a paced client carries 97-100% of its target, and all of those would be repeated.
    achieved_boundary: float = 0.03
    boundary_samples: int = 3

    @property
    def limit_us(self) -> float:
        return self.limit_ms * 1000.0


@dataclass(frozen=True)
class Probe:
    """One measured probe: the offered load, what the clients achieved, the percentile (us)."""

    offered: float
    achieved: float
    latency_us: float

    def passes(self, target: Target) -> bool:
        return (
            self.latency_us <= target.limit_us
            and self.achieved >= target.min_achieved * self.offered
        )

    def clear(self, target: Target) -> bool:
        """Whether one sample decides: the percentile and the achieved share away from their
        limits."""
        near_limit = abs(self.latency_us / target.limit_us - 1.0) <= target.boundary
        share = self.achieved / self.offered if self.offered else 0.0
        near_share = abs(share - target.min_achieved) <= target.achieved_boundary
        return not near_limit and not near_share


@dataclass(frozen=True)
class Search:
    """Where the search stands after the probes given: the next load to probe (None: done),
    the bracket, and the knee when done (None: not even `start` passed)."""

    next_load: int | None
    passing: int | None  # highest load judged passing
    failing: int | None  # lowest load judged failing
    probes: int
    done: bool
    reason: str
    repeat: bool = False  # next_load repeats the last load (a boundary probe)

    @property
    def knee(self) -> int | None:
        return self.passing if self.done else None


def grid_probes(target: Target) -> int:
    """The points of a geometric grid from start to maximum with ratio 1 + resolution."""
    if target.maximum <= target.start:
        return 1
    return math.floor(math.log(target.maximum / target.start) / math.log1p(target.resolution)) + 1


def _judge(samples: Sequence[Probe], target: Target) -> bool | None:
    """The verdict on one load; None: repeat it."""
    if len(samples) == 1 and samples[0].clear(target):
        return samples[0].passes(target)
    passed = sum(1 for s in samples if s.passes(target))
    if passed * 2 > target.boundary_samples:
        return True
    if (len(samples) - passed) * 2 > target.boundary_samples:
        return False
    return None


def search(target: Target, probes: Sequence[Probe]) -> Search:
    """Replay the probes in order and say what comes next (see the module docstring). The
    probes must be the ones this function asked for, in order."""
    passing: int | None = None
    failing: int | None = None
    load = round(target.start)
    top = round(target.maximum)
    i = 0
    while True:
        samples: list[Probe] = []
        while i < len(probes) and round(probes[i].offered) == load:
            samples.append(probes[i])
            i += 1
            if _judge(samples, target) is not None:
                break
        verdict = _judge(samples, target) if samples else None
        if verdict is None:
            return Search(load, passing, failing, len(probes), False, "probing", bool(samples))
        if verdict:
            passing = load
        else:
            failing = load
        if failing is None:
            if load >= top:
                return Search(
                    None, passing, None, len(probes), True, f"passes at the maximum {top}"
                )
            load = min(load * 2, top)
            continue
        if passing is None:
            return Search(None, None, failing, len(probes), True, f"fails at the start {failing}")
        middle = round((passing + failing) / 2)
        if failing <= passing * (1 + target.resolution) or middle in (passing, failing):
            return Search(
                None,
                passing,
                failing,
                len(probes),
                True,
                f"between {passing} (passes) and {failing} (fails)",
            )
        load = middle


# --- from a run's status ----------------------------------------------------------------------


def percentile_of(result: Mapping[str, Any], percentile: str) -> float | None:
    """The named percentile (us) of a step's result: the worst of its operations."""
    values = [
        v
        for op in (result.get("operations") or {})
        if (v := records.latency(result, op, percentile)) is not None
    ]
    return max(values) if values else None


def probe_of(entry: Mapping[str, Any], percentile: str) -> Probe | None:
    """A probe from a step's status entry (its offered load and result); None while it has
    none."""
    result = entry.get("result")
    offered = entry.get("offeredOpsPerSecond")
    if not result or offered is None or entry.get("phase") != "Succeeded":
        return None
    achieved = records.throughput(result)
    latency = percentile_of(result, percentile)
    if achieved is None or latency is None:
        return None
    return Probe(float(offered), achieved, latency)


@dataclass(frozen=True)
class Estimate:
    """The knee's repetitions: the achieved throughput and the percentile, each with its
    confidence interval."""

    throughput: stats.Summary
    latency_us: stats.Summary

    def met(self, target: Target) -> bool | None:
        mean = self.latency_us.mean
        return None if mean is None else mean <= target.limit_us


def estimate(trials: Iterable[Probe]) -> Estimate:
    trials = list(trials)
    return Estimate(
        stats.summarise(t.achieved for t in trials),
        stats.summarise(t.latency_us for t in trials),
    )


def _summary_dict(s: stats.Summary, digits: int, scale: float = 1.0) -> dict[str, Any]:
    out: dict[str, Any] = {"n": s.n}
    for key, value in (("mean", s.mean), ("ciLow", s.ci_low), ("ciHigh", s.ci_high)):
        if value is not None:
            out[key] = round(value * scale, digits)
    return out


def status(
    target: Target, found: Search, at_knee: Sequence[Probe], workload: str
) -> dict[str, Any]:
    """A workload's entry of status.knee: the knee, its interval, the limit, probes vs grid."""
    out: dict[str, Any] = {
        "workload": workload,
        "percentile": target.percentile,
        "limitMs": target.limit_ms,
        "resolution": target.resolution,
        "probes": found.probes,
        "gridProbes": grid_probes(target),
        "done": found.done,
        "reason": found.reason,
    }
    if found.knee is not None:
        out["offeredOpsPerSecond"] = found.knee
    if found.failing is not None:
        out["failingOpsPerSecond"] = found.failing
    if at_knee:
        est = estimate(at_knee)
        out["throughput"] = _summary_dict(est.throughput, 1)
        out["latencyMs"] = _summary_dict(est.latency_us, 3, scale=1 / 1000.0)
        out["met"] = est.met(target)
    return out


@dataclass(frozen=True)
class CurvePoint:
    """One probe or knee trial of a run, for the latency-versus-throughput curve."""

    workload: str
    offered: float
    achieved: float
    latency_ms: float
    at_knee: bool  # a repetition at the knee, not a probe


def curve(run: Mapping[str, Any]) -> list[CurvePoint]:
    """Every measured probe and knee trial of a run with spec.knee, in step order."""
    knee_spec = (run.get("spec") or {}).get("knee") or {}
    percentile = str((knee_spec.get("latency") or {}).get("percentile", "p99"))
    out = []
    for entry in (run.get("status") or {}).get("steps") or ():
        if entry.get("kind") not in ("probe", "run"):
            continue
        probe = probe_of(entry, percentile)
        if probe is None:
            continue
        out.append(
            CurvePoint(
                str(entry.get("workload")),
                probe.offered,
                probe.achieved,
                probe.latency_us / 1000.0,
                entry.get("kind") == "run",
            )
        )
    return out
