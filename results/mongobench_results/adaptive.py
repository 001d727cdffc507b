"""Adaptive repetitions: when a cell has had enough trials.

`repetitions: N` with `repeatUntil: {metric, relativeHalfWidth, maxRepetitions}` (min N, max
maxRepetitions) keeps adding trials (rounds, in an experiment) until the confidence interval of
the named metric's mean is narrow enough in every cell, or `max` is reached. The rule is one pure
function, used by the operator (BenchmarkRun and BenchmarkExperiment), the CLI and the method
benchmark alike:

- fewer than `min` valid trials: go on;
- the interval's half-width relative to the mean at or below the target: stop, target met;
- `max` trials reached: stop, target not met;
- otherwise go on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mongobench_results import stats


@dataclass(frozen=True)
class Policy:
    min: int
    max: int
    metric: str | None = None  # e.g. "throughput" or "latency.READ.p99"; None: fixed repetitions
    relative_half_width: float | None = None  # e.g. 0.05 for +-5% of the mean
    confidence: float = stats.DEFAULT_CONFIDENCE

    @classmethod
    def fixed(cls, repetitions: int) -> Policy:
        return cls(min=repetitions, max=repetitions)

    @property
    def adaptive(self) -> bool:
        return self.metric is not None and self.relative_half_width is not None


@dataclass(frozen=True)
class Decision:
    done: bool
    met: bool | None  # target reached (None while going on, or for fixed repetitions)
    n: int
    relative_half_width: float | None  # observed, None below 2 trials or at a zero mean


def relative_half_width(values: Iterable[float], confidence: float) -> float | None:
    """Half-width of the mean's t interval as a fraction of |mean|."""
    s = stats.summarise(values, confidence)
    if s.n < 2 or s.mean is None or s.mean == 0 or s.ci_high is None:
        return None
    return (s.ci_high - s.mean) / abs(s.mean)


def decide(policy: Policy, values: Iterable[float]) -> Decision:
    """Whether a cell whose valid trials measured `values` (of the policy's metric) is done."""
    data = list(values)
    n = len(data)
    width = relative_half_width(data, policy.confidence)
    if not policy.adaptive:
        return Decision(done=n >= policy.max, met=None, n=n, relative_half_width=width)
    assert policy.relative_half_width is not None  # adaptive says so
    if n < policy.min:
        return Decision(done=False, met=None, n=n, relative_half_width=width)
    if width is not None and width <= policy.relative_half_width:
        return Decision(done=True, met=True, n=n, relative_half_width=width)
    if n >= policy.max:
        return Decision(done=True, met=False, n=n, relative_half_width=width)
    return Decision(done=False, met=None, n=n, relative_half_width=width)


def all_done(policy: Policy, cells: Iterable[Iterable[float]]) -> bool:
    """An experiment stops adding rounds when every cell is done."""
    return all(decide(policy, values).done for values in cells)
