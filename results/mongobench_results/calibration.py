"""A/A calibration (pure): what the comparison reports when nothing differs, and the smallest
change it could detect at the noise it saw.

An A/A experiment (a BenchmarkExperiment with `calibration: true`) runs one configuration as two
cells, `calibration=a` and `calibration=b`, each on a cluster of its own, one run per cell and
round. From its runs, per workload and metric:

- **false-positive rate**: the runs are cut into windows of `window` consecutive rounds (the n a
  study would use, default 3), sliding by one round; each window's a-runs are compared with its
  b-runs by `compare.compare` itself (its test, alpha, intervals and any filtering of invalid
  trials), and a window whose verdict is a change (not "~") is a false positive. The rate is
  false positives / windows. Windows overlap, so they are not independent: `independent` says
  how many disjoint windows the rounds hold, the honest sample size of the rate.
- **minimum detectable effect** (MDE) at 80 % power: the smallest true difference of means a
  two-sided Welch test at compare's alpha finds four times in five, with the noise observed:
  (t(1 - alpha/2, df) + t(power, df)) x SD x sqrt(2 / n), df = 2n - 2, SD pooled over both
  cells (their difference is no signal in an A/A run), as a fraction of the mean; given for
  n = `window` (a study's size) and for n = every round (this calibration's own size).
- the A/A change over all rounds, as compare states it (it should be "~").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mongobench_results import compare, stats

CELL_LABEL = "experiment.cell"  # the runs' spec label (the operator's experiment.objects)
ROUND_LABEL = "experiment.repetition"
A, B = "calibration=a", "calibration=b"
POWER = 0.8
DEFAULT_WINDOW = compare.MIN_N
DEFAULT_METRICS = ("throughput", "avg", "p99")
# Where a study names the calibration it ran under (an annotation of its BenchmarkExperiment).
ANNOTATION = "mongobench.io/calibration"


class CalibrationError(ValueError):
    """Runs that are no A/A calibration; the message is one line for the user."""


@dataclass(frozen=True)
class Row:
    workload: str
    metric: str  # compare's metric id, e.g. "throughput" or "READ p99"
    unit: str
    rounds: int  # trials of the smaller cell over all rounds
    window: int
    windows: int  # comparisons made
    independent: int  # disjoint windows the rounds hold
    false_positives: int
    mean: float | None
    sd: float | None  # pooled over both cells
    mde: float | None  # relative, at n = window
    mde_all: float | None  # relative, at n = rounds
    verdict: str  # the A/A comparison over all rounds

    @property
    def false_positive_rate(self) -> float | None:
        return self.false_positives / self.windows if self.windows else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "metric": self.metric,
            "unit": self.unit,
            "rounds": self.rounds,
            "window": self.window,
            "windows": self.windows,
            "independentWindows": self.independent,
            "falsePositives": self.false_positives,
            "falsePositiveRate": self.false_positive_rate,
            "mean": self.mean,
            "sd": self.sd,
            "mde": self.mde,
            "mdeAllRounds": self.mde_all,
            "verdict": self.verdict,
        }


@dataclass(frozen=True)
class Calibration:
    rows: tuple[Row, ...]
    rounds: int
    window: int
    alpha: float
    power: float
    test: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds,
            "window": self.window,
            "alpha": self.alpha,
            "power": self.power,
            "test": self.test,
            "rows": [r.to_dict() for r in self.rows],
        }


def mde(sd: float, mean: float, n: int, alpha: float, power: float = POWER) -> float | None:
    """The minimum detectable effect as a fraction of |mean| (None below n = 2 or at mean 0)."""
    if n < 2 or mean == 0:
        return None
    df = 2 * n - 2
    # t_quantile(c, df) is two-sided: P(|T| <= t) = c; one-sided quantile p is c = 2p - 1.
    t = stats.t_quantile(1 - alpha, df) + stats.t_quantile(2 * power - 1, df)
    return t * sd * math.sqrt(2 / n) / abs(mean)


def _round(run: Mapping[str, Any]) -> int:
    labels = (run.get("spec") or {}).get("labels") or {}
    try:
        return int(labels[ROUND_LABEL])
    except (KeyError, ValueError):
        raise CalibrationError(
            f"run {run.get('metadata', {}).get('name')} has no {ROUND_LABEL} label: "
            "calibrate takes the runs of a calibration experiment"
        ) from None


def _pooled_sd(a: Sequence[float], b: Sequence[float]) -> float | None:
    sa, sb = stats.summarise(a), stats.summarise(b)
    if sa.sd is None or sb.sd is None:
        return None
    return math.sqrt(((sa.n - 1) * sa.sd**2 + (sb.n - 1) * sb.sd**2) / (sa.n + sb.n - 2))


def calibrate(
    runs: Sequence[compare.RunInput],
    *,
    window: int = DEFAULT_WINDOW,
    metrics: Sequence[str] = DEFAULT_METRICS,
    alpha: float = stats.DEFAULT_ALPHA,
    confidence: float = stats.DEFAULT_CONFIDENCE,
    test: compare.Test = "welch",
) -> Calibration:
    """The calibration of an A/A experiment's runs (CalibrationError when they are none)."""
    cells = {(r.run.get("spec") or {}).get("labels", {}).get(CELL_LABEL) for r in runs}
    if cells != {A, B}:
        raise CalibrationError(
            f"an A/A calibration has runs of cells {A} and {B}; found "
            f"{', '.join(sorted(str(c) for c in cells))}"
        )
    if window < 2:
        raise CalibrationError("the window (n per side) must be at least 2")
    rounds = sorted({_round(r.run) for r in runs})
    options: dict[str, Any] = {
        "baseline": A,
        "group_by": CELL_LABEL,
        "metrics": metrics,
        "alpha": alpha,
        "confidence": confidence,
        "test": test,
    }
    full = compare.compare(runs, **options)
    starts = range(len(rounds) - window + 1)
    windows = []
    for i in starts:
        keep = set(rounds[i : i + window])
        chosen = [r for r in runs if _round(r.run) in keep]
        try:
            windows.append(compare.compare(chosen, **options))
        except compare.ComparisonError:
            continue  # e.g. no measured step in these rounds
    rows = []
    for b_row in (r for r in full.rows if r.configuration == B):
        a_row = next(
            r
            for r in full.rows
            if r.baseline and r.workload == b_row.workload and r.metric.id == b_row.metric.id
        )
        verdicts = [
            r.significant
            for w in windows
            for r in w.rows
            if r.configuration == B and r.workload == b_row.workload and r.metric == b_row.metric
        ]
        tested = [v for v in verdicts if v is not None]
        a_vals, b_vals = list(a_row.values), list(b_row.values)
        sd = _pooled_sd(a_vals, b_vals)
        mean = stats.summarise(a_vals + b_vals).mean
        n_all = min(len(a_vals), len(b_vals))
        rows.append(
            Row(
                workload=b_row.workload,
                metric=b_row.metric.id,
                unit=b_row.metric.unit,
                rounds=n_all,
                window=window,
                windows=len(tested),
                independent=n_all // window,
                false_positives=sum(1 for v in tested if v),
                mean=mean,
                sd=sd,
                mde=None if sd is None or mean is None else mde(sd, mean, window, alpha),
                mde_all=None if sd is None or mean is None else mde(sd, mean, n_all, alpha),
                verdict=b_row.verdict,
            )
        )
    return Calibration(tuple(rows), len(rounds), window, alpha, POWER, test)
