"""Statistics of repeated benchmark measurements (pure: numbers in, numbers out).

One library for the CLI, the reports and the operator (BenchmarkExperiment status): it imports
only numpy and scipy, never a CLI or plotting package. scipy does the statistics; this module
only chooses them and handles the small-sample edge cases benchmarks hit every day.

- A sample's mean with a t-distribution confidence interval (n >= 2).
- The difference of two means (new - baseline) with Welch's t-test and the Welch-Satterthwaite
  confidence interval: variances are not assumed equal (a 5-node cluster varies differently
  from a 3-node one).
- The Mann-Whitney U test (exact for small samples without ties), the rank test Go's benchstat
  uses; with n samples per side it cannot reach p < alpha below `rank_test_min_samples(alpha)`.
- Hedges' g: Cohen's d on the pooled SD times the exact small-sample correction
  J(df) = Gamma(df/2) / (sqrt(df/2) Gamma((df-1)/2)), df = n1 + n2 - 2 (Hedges 1981).

Zero variance (every repetition gave the same number, e.g. a throttled rate) is no error: two
constant samples with the same mean differ by nothing (p = 1), with different means they differ
exactly (p = 0, interval of zero width), which is what scipy's Welch test gives too.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np
from numpy.typing import NDArray


def _scipy() -> tuple[ModuleType, ModuleType]:
    """scipy.stats and scipy.special, imported on first use: importing scipy.stats takes about a
    second, which `mongobench list` and `watch` should not pay."""
    from scipy import special, stats  # noqa: PLC0415

    return stats, special


DEFAULT_CONFIDENCE = 0.95
DEFAULT_ALPHA = 0.05


@dataclass(frozen=True)
class Summary:
    """n, mean, sample SD, coefficient of variation and the mean's confidence interval."""

    n: int
    mean: float | None
    sd: float | None  # sample SD (ddof=1); None for n < 2
    ci_low: float | None
    ci_high: float | None
    confidence: float

    @property
    def cv(self) -> float | None:
        """SD / |mean|; None when undefined."""
        if self.sd is None or self.mean is None or self.mean == 0:
            return None
        return self.sd / abs(self.mean)


@dataclass(frozen=True)
class Difference:
    """new - baseline, with the tests and the effect size."""

    n_base: int
    n_new: int
    delta: float  # mean(new) - mean(baseline)
    ci_low: float | None  # Welch-Satterthwaite interval of delta
    ci_high: float | None
    df: float | None  # Welch-Satterthwaite degrees of freedom
    welch_p: float | None
    rank_p: float | None  # Mann-Whitney U, two-sided
    hedges_g: float | None
    base_mean: float
    confidence: float

    @property
    def relative(self) -> float | None:
        """delta as a fraction of the baseline mean."""
        return self.delta / abs(self.base_mean) if self.base_mean else None

    @property
    def relative_ci(self) -> tuple[float, float] | None:
        """The interval as fractions of the baseline mean (the baseline mean taken as fixed)."""
        if self.ci_low is None or self.ci_high is None or not self.base_mean:
            return None
        scale = abs(self.base_mean)
        return self.ci_low / scale, self.ci_high / scale


Values = Sequence[float] | NDArray[np.float64]


def _clean(values: Values) -> NDArray[np.float64]:
    a = np.asarray([float(v) for v in values if v is not None], dtype=np.float64)
    clean: NDArray[np.float64] = a[np.isfinite(a)]
    return clean


def summarise(values: Values, confidence: float = DEFAULT_CONFIDENCE) -> Summary:
    a = _clean(values)
    n = int(a.size)
    if n == 0:
        return Summary(0, None, None, None, None, confidence)
    mean = float(a.mean())
    if n == 1:
        return Summary(1, mean, None, None, None, confidence)
    sd = float(a.std(ddof=1))
    if sd == 0:
        return Summary(n, mean, 0.0, mean, mean, confidence)
    st, _ = _scipy()
    low, high = st.t.interval(confidence, n - 1, loc=mean, scale=sd / math.sqrt(n))
    return Summary(n, mean, sd, float(low), float(high), confidence)


def hedges_j(df: float) -> float:
    """Exact small-sample correction factor of Hedges' g (tends to 1 as df grows)."""
    if df <= 1:
        raise ValueError("Hedges' correction needs df > 1 (at least 3 measurements in all)")
    _, special = _scipy()
    return float(
        math.exp(special.gammaln(df / 2) - special.gammaln((df - 1) / 2)) / math.sqrt(df / 2)
    )


def hedges_g(base: Values, new: Values) -> float | None:
    """(mean(new) - mean(base)) / pooled SD x J(n1 + n2 - 2); None when undefined."""
    a, b = _clean(base), _clean(new)
    n1, n2 = a.size, b.size
    if n1 < 2 or n2 < 2:
        return None
    pooled = math.sqrt(((n1 - 1) * a.var(ddof=1) + (n2 - 1) * b.var(ddof=1)) / (n1 + n2 - 2))
    if pooled == 0:
        return None
    d = (float(b.mean()) - float(a.mean())) / pooled
    return d * hedges_j(n1 + n2 - 2)


def welch(
    base: Values, new: Values, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float, float, float, float]:
    """Welch's t-test of new vs base: (p, df, ci_low, ci_high) of mean(new) - mean(base).
    Both samples need n >= 2."""
    a, b = _clean(base), _clean(new)
    if a.size < 2 or b.size < 2:
        raise ValueError("Welch's test needs at least 2 measurements on each side")
    delta = float(b.mean() - a.mean())
    if a.var(ddof=1) == 0 and b.var(ddof=1) == 0:
        return (1.0 if delta == 0 else 0.0), float(a.size + b.size - 2), delta, delta
    st, _ = _scipy()
    with warnings.catch_warnings():  # nearly constant samples: scipy warns, the result stands
        warnings.simplefilter("ignore", RuntimeWarning)
        res = st.ttest_ind(b, a, equal_var=False)
        ci = res.confidence_interval(confidence)
    return float(res.pvalue), float(res.df), float(ci.low), float(ci.high)


def mann_whitney(base: Values, new: Values) -> float | None:
    """Two-sided Mann-Whitney U p-value (scipy picks the exact distribution for small samples
    without ties); None with an empty side."""
    a, b = _clean(base), _clean(new)
    if a.size == 0 or b.size == 0:
        return None
    if np.all(a == a[0]) and np.all(b == a[0]):
        return 1.0  # all equal: no evidence of any shift (scipy would divide by zero)
    st, _ = _scipy()
    return float(st.mannwhitneyu(b, a, alternative="two-sided").pvalue)


def rank_test_min_samples(alpha: float = DEFAULT_ALPHA, limit: int = 50) -> int:
    """Smallest n such that n vs n measurements can give a two-sided exact U-test p <= alpha:
    the most extreme ordering has p = 2 / C(2n, n) (benchstat's table: n=3 gives 0.1, n=4
    gives 0.029)."""
    for n in range(1, limit + 1):
        if 2 / math.comb(2 * n, n) <= alpha:
            return n
    return limit + 1


def difference(
    base: Values, new: Values, confidence: float = DEFAULT_CONFIDENCE
) -> Difference | None:
    """The comparison of two samples; None when either is empty. With n < 2 on a side only
    the difference of means is known (no interval, no t-test)."""
    a, b = _clean(base), _clean(new)
    if a.size == 0 or b.size == 0:
        return None
    delta = float(b.mean() - a.mean())
    p = df = low = high = None
    if a.size >= 2 and b.size >= 2:
        p, df, low, high = welch(a, b, confidence)
    return Difference(
        n_base=int(a.size),
        n_new=int(b.size),
        delta=delta,
        ci_low=low,
        ci_high=high,
        df=df,
        welch_p=p,
        rank_p=mann_whitney(a, b),
        hedges_g=hedges_g(a, b),
        base_mean=float(a.mean()),
        confidence=confidence,
    )
