"""Statistics of repeated benchmark measurements (pure: numbers in, numbers out).

One library for the CLI, the reports and the operator (BenchmarkExperiment status); it handles
the small-sample edge cases benchmarks hit every day.

- A sample's mean with a t-distribution confidence interval (n >= 2).
- The difference of two means (new - baseline) with Welch's t-test and the Welch-Satterthwaite
  confidence interval: variances are not assumed equal (a 5-node cluster varies differently
  from a 3-node one).
- The Mann-Whitney U test (exact for small samples without ties), the rank test Go's benchstat
  uses; with n samples per side it cannot reach p < alpha below `rank_test_min_samples(alpha)`.
- Hedges' g: Cohen's d on the pooled SD times the exact small-sample correction
  J(df) = Gamma(df/2) / (sqrt(df/2) Gamma((df-1)/2)), df = n1 + n2 - 2 (Hedges 1981).
- The relative change's interval from the ratio of the two uncertain means (Fieller's theorem
  with Welch's degrees of freedom), not with the baseline's mean taken as exact; unbounded, and
  said so, when the baseline's mean is not significantly different from 0.
- A non-parametric alternative: the percentile bootstrap of the change (both samples resampled
  independently; a fixed seed and a stated number of resamples, so a table is reproducible).
- Holm's and Benjamini-Hochberg's adjustment of the p-values of a family of comparisons.

Zero variance (every repetition gave the same number, e.g. a throttled rate) is no error: two
constant samples with the same mean differ by nothing (p = 1), with different means they differ
exactly (p = 0, interval of zero width), which is what scipy's Welch test gives too.

Why no scipy (nor numpy): the operator computes a BenchmarkExperiment's comparison in its own
process, and importing scipy.stats there keeps about 60 MiB resident for good (the operator idles
under 50 MiB) and adds ~100 MB to its image. What the tests need is small: Student's t
distribution (its CDF is a regularized incomplete beta function, evaluated by its continued
fraction; its quantile by bisection on the CDF), the Mann-Whitney U distribution (exact integer
counts: the coefficients of a Gaussian binomial) and its normal approximation with scipy's tie
and continuity corrections, and log-gamma (math.lgamma). They follow scipy's definitions and
choices exactly (scipy.stats.ttest_ind(equal_var=False), t.interval, mannwhitneyu with
method="auto"), and results/tests/test_stats.py checks them against scipy 1.17.1 to 1e-9 over
seeded random samples and the textbook values. A child process with scipy was the other way:
it keeps scipy in the image and costs an interpreter start and a scipy import (~1 s) per
experiment; this costs nothing resident.
"""

from __future__ import annotations

import functools
import math
import random
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

DEFAULT_CONFIDENCE = 0.95
DEFAULT_ALPHA = 0.05
# The percentile bootstrap: enough resamples for the 2.5% and 97.5% percentiles to move by well
# under a tenth of the interval between seeds; the seed is fixed so a table prints the same twice.
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 25

FIELLER = "Fieller (Welch df)"
PARAMETRIC = f"Welch-Satterthwaite for the difference, {FIELLER} for the relative change"
ADJUSTMENTS = ("holm", "bh", "none")
ADJUSTMENT_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no adjustment"}


def bootstrap_method(resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> str:
    return f"percentile bootstrap ({resamples} resamples, seed {seed})"


@dataclass(frozen=True)
class Interval:
    """An interval of a change and the method that gave it. `unbounded`: the data cannot bound
    it (Fieller, with a baseline mean not significantly different from 0): no numbers then."""

    low: float | None
    high: float | None
    method: str
    unbounded: bool = False

    @property
    def bounds(self) -> tuple[float, float] | None:
        if self.unbounded or self.low is None or self.high is None:
            return None
        return self.low, self.high


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
    # The interval of `relative` (Fieller's by default); ci_low/ci_high are then Welch's for
    # delta. With the bootstrap both come from the same resamples.
    relative_interval: Interval | None = None
    interval_method: str = PARAMETRIC

    @property
    def relative(self) -> float | None:
        """delta as a fraction of the baseline mean."""
        return self.delta / abs(self.base_mean) if self.base_mean else None

    @property
    def relative_ci(self) -> tuple[float, float] | None:
        """The interval of `relative`; None when there is none or it is unbounded."""
        return self.relative_interval.bounds if self.relative_interval else None

    @property
    def relative_unbounded(self) -> bool:
        return bool(self.relative_interval and self.relative_interval.unbounded)


Values = Iterable[float]


def _clean(values: Values) -> list[float]:
    return [x for x in (float(v) for v in values if v is not None) if math.isfinite(x)]


def _mean(a: Sequence[float]) -> float:
    return math.fsum(a) / len(a)


def _var(a: Sequence[float]) -> float:
    """Sample variance (ddof=1), two-pass as numpy computes it."""
    m = _mean(a)
    return math.fsum((x - m) ** 2 for x in a) / (len(a) - 1)


# --- Student's t distribution -------------------------------------------------------------------

_TINY = 1e-300
_EPS = 1e-16


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz);
    converges fast for x < (a + 1) / (a + b + 2)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 10_000):
        for aa in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


def _betainc(a: float, b: float, x: float, y: float) -> float:
    """I_x(a, b), the regularized incomplete beta function; y = 1 - x, given exactly by the
    caller (for the t distribution both come from t^2 without cancellation)."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front + a * math.log(x) + b * math.log(y)) * _beta_fraction(a, b, x) / a
    return (
        1.0 - math.exp(log_front + a * math.log(x) + b * math.log(y)) * _beta_fraction(b, a, y) / b
    )


def t_two_sided(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom (scipy: 2 * t.sf(|t|, df))."""
    t2 = t * t
    return _betainc(df / 2, 0.5, df / (df + t2), t2 / (df + t2))


def _t_pdf(t: float, df: float) -> float:
    return math.exp(
        math.lgamma((df + 1) / 2)
        - math.lgamma(df / 2)
        - 0.5 * math.log(df * math.pi)
        - (df + 1) / 2 * math.log1p(t * t / df)
    )


@functools.lru_cache(maxsize=4096)
def t_quantile(confidence: float, df: float) -> float:
    """The t > 0 with P(|T| <= t) = confidence (scipy: t.ppf((1 + confidence) / 2, df)):
    Newton's method on the CDF, kept inside a shrinking bracket (bisection when it leaves it)."""
    target = 1.0 - confidence
    lo, hi = 0.0, math.inf
    t = max(statistics.NormalDist().inv_cdf((1 + confidence) / 2), 1e-3)
    for _ in range(400):
        f = t_two_sided(t, df) - target
        if f == 0:
            return t
        if f > 0:  # tail too heavy: t too small
            lo = t
        else:
            hi = t
        step = t + f / (2 * _t_pdf(t, df))  # d/dt P(|T| >= t) = -2 pdf(t)
        if not lo < step < hi:
            step = 2 * lo if hi == math.inf else (lo + hi) / 2
        if abs(step - t) <= 4 * _EPS * t:
            return step
        t = step
    return t


# --- the Mann-Whitney U distribution --------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """How many of the C(m + n, m) orderings give U = 0 .. m*n (no ties): the coefficients of
    the Gaussian binomial [m + n choose m] = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i)."""
    top = m * n
    poly = [1] + [0] * top
    for i in range(1, m + 1):
        for k in range(top, n + i - 1, -1):
            poly[k] -= poly[k - n - i]
        for k in range(i, top + 1):
            poly[k] += poly[k - i]
    return tuple(poly)


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Average ranks (1-based, ties share their mean rank) and the sizes of the tie groups."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def _mann_whitney_p(x: Sequence[float], y: Sequence[float]) -> float:
    """Two-sided p of U for x against y, as scipy.stats.mannwhitneyu(x, y) with method="auto":
    exact when a side has at most 8 values and nothing ties, else the normal approximation with
    the tie and continuity corrections."""
    n1, n2 = len(x), len(y)
    ranks, ties = _ranks([*x, *y])
    u1 = math.fsum(ranks[:n1]) - n1 * (n1 + 1) / 2
    u = max(u1, n1 * n2 - u1)
    if (n1 <= 8 or n2 <= 8) and all(t == 1 for t in ties):
        counts = _u_counts(min(n1, n2), max(n1, n2))
        p = 2 * sum(counts[round(u) :]) / math.comb(n1 + n2, n1)
    else:
        n = n1 + n2
        tie_term = sum(t**3 - t for t in ties)
        s = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
        z = (u - n1 * n2 / 2 - 0.5) / s
        p = math.erfc(z / math.sqrt(2))
    return min(max(p, 0.0), 1.0)


# --- what the comparison uses ---------------------------------------------------------------------


def summarise(values: Values, confidence: float = DEFAULT_CONFIDENCE) -> Summary:
    a = _clean(values)
    n = len(a)
    if n == 0:
        return Summary(0, None, None, None, None, confidence)
    mean = _mean(a)
    if n == 1:
        return Summary(1, mean, None, None, None, confidence)
    sd = math.sqrt(_var(a))
    if sd == 0:
        return Summary(n, mean, 0.0, mean, mean, confidence)
    half = t_quantile(confidence, n - 1) * sd / math.sqrt(n)
    return Summary(n, mean, sd, mean - half, mean + half, confidence)


def hedges_j(df: float) -> float:
    """Exact small-sample correction factor of Hedges' g (tends to 1 as df grows)."""
    if df <= 1:
        raise ValueError("Hedges' correction needs df > 1 (at least 3 measurements in all)")
    return math.exp(math.lgamma(df / 2) - math.lgamma((df - 1) / 2)) / math.sqrt(df / 2)


def hedges_g(base: Values, new: Values) -> float | None:
    """(mean(new) - mean(base)) / pooled SD x J(n1 + n2 - 2); None when undefined."""
    a, b = _clean(base), _clean(new)
    n1, n2 = len(a), len(b)
    if n1 < 2 or n2 < 2:
        return None
    pooled = math.sqrt(((n1 - 1) * _var(a) + (n2 - 1) * _var(b)) / (n1 + n2 - 2))
    if pooled == 0:
        return None
    d = (_mean(b) - _mean(a)) / pooled
    return d * hedges_j(n1 + n2 - 2)


def welch(
    base: Values, new: Values, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float, float, float, float]:
    """Welch's t-test of new vs base: (p, df, ci_low, ci_high) of mean(new) - mean(base).
    Both samples need n >= 2."""
    a, b = _clean(base), _clean(new)
    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's test needs at least 2 measurements on each side")
    delta = _mean(b) - _mean(a)
    v1, v2 = _var(a) / len(a), _var(b) / len(b)
    if v1 == 0 and v2 == 0:
        return (1.0 if delta == 0 else 0.0), float(len(a) + len(b) - 2), delta, delta
    se = math.sqrt(v1 + v2)
    df = (v1 + v2) ** 2 / (v1**2 / (len(a) - 1) + v2**2 / (len(b) - 1))
    half = t_quantile(confidence, df) * se
    return t_two_sided(delta / se, df), df, delta - half, delta + half


def mann_whitney(base: Values, new: Values) -> float | None:
    """Two-sided Mann-Whitney U p-value (the exact distribution for small samples without
    ties); None with an empty side."""
    a, b = _clean(base), _clean(new)
    if not a or not b:
        return None
    if all(v == a[0] for v in (*a, *b)):
        return 1.0  # all equal: no evidence of any shift (the approximation divides by zero)
    return _mann_whitney_p(b, a)


def rank_test_min_samples(alpha: float = DEFAULT_ALPHA, limit: int = 50) -> int:
    """Smallest n such that n vs n measurements can give a two-sided exact U-test p <= alpha:
    the most extreme ordering has p = 2 / C(2n, n) (benchstat's table: n=3 gives 0.1, n=4
    gives 0.029)."""
    for n in range(1, limit + 1):
        if 2 / math.comb(2 * n, n) <= alpha:
            return n
    return limit + 1


def ratio_interval(
    base: Values, new: Values, confidence: float = DEFAULT_CONFIDENCE
) -> Interval | None:
    """Fieller's interval of mean(new) / mean(base) for two independent samples with unequal
    variances: every rho for which "mean(new) = rho x mean(base)" is not rejected, i.e.
    (y - rho x)^2 <= t^2 (v_y + rho^2 v_x) with x, y the means and v their squared standard
    errors; t at the Welch-Satterthwaite df of y - R x at the estimate R = y / x (Tamhane and
    Logan's Fieller-Welch interval). The leading coefficient x^2 - t^2 v_x is not positive when
    the baseline's mean is not significantly different from 0: the set is then unbounded (the
    whole line or two half-lines), said so instead of a number. None with n < 2 on a side."""
    a, b = _clean(base), _clean(new)
    if len(a) < 2 or len(b) < 2:
        return None
    x, y = _mean(a), _mean(b)
    vx, vy = _var(a) / len(a), _var(b) / len(b)
    if x == 0:
        return Interval(None, None, FIELLER, unbounded=True)
    r = y / x
    if vx == 0 and vy == 0:
        return Interval(r, r, FIELLER)
    s2 = vy + r * r * vx
    den = vy**2 / (len(b) - 1) + (r * r * vx) ** 2 / (len(a) - 1)
    df = s2**2 / den if den > 0 else float(len(a) + len(b) - 2)
    t2 = t_quantile(confidence, df) ** 2
    lead = x * x - t2 * vx
    if lead <= 0:
        return Interval(None, None, FIELLER, unbounded=True)
    # The discriminant (xy)^2 - lead (y^2 - t^2 v_y), rearranged to t^2 (v_x y^2 + v_y lead):
    # no cancellation between two large terms.
    root = math.sqrt(t2 * (vx * y * y + vy * lead))
    return Interval((x * y - root) / lead, (x * y + root) / lead, FIELLER)


def relative_interval(
    base: Values, new: Values, confidence: float = DEFAULT_CONFIDENCE
) -> Interval | None:
    """Fieller's interval of the relative change (mean(new) - mean(base)) / |mean(base)|."""
    ratio = ratio_interval(base, new, confidence)
    if ratio is None or ratio.bounds is None:
        return ratio
    low, high = ratio.bounds
    if _mean(_clean(base)) > 0:
        return Interval(low - 1, high - 1, ratio.method)
    return Interval(1 - high, 1 - low, ratio.method)  # delta / |x| = -(rho - 1) for x < 0


def percentile(ordered: Sequence[float], q: float) -> float:
    """numpy's default ("linear") percentile of sorted values, q in [0, 1]."""
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def bootstrap(
    base: Values,
    new: Values,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[Interval, Interval] | None:
    """Percentile bootstrap intervals of mean(new) - mean(base) and of the relative change
    (mean(new) - mean(base)) / |mean(base)|: each sample resampled with replacement on its own
    (as scipy.stats.bootstrap with paired=False), `resamples` times from Random(seed). Needs
    n >= 2 a side; resamples whose baseline mean is 0 have no relative change and are left out
    of that interval (unbounded when more than the tails' share of them are)."""
    a, b = _clean(base), _clean(new)
    if len(a) < 2 or len(b) < 2:
        return None
    rng = random.Random(seed)
    method = bootstrap_method(resamples, seed)
    na, nb = len(a), len(b)
    deltas: list[float] = []
    relatives: list[float] = []
    for _ in range(resamples):
        x = math.fsum(rng.choices(a, k=na)) / na
        y = math.fsum(rng.choices(b, k=nb)) / nb
        deltas.append(y - x)
        if x != 0:
            relatives.append((y - x) / abs(x))
    tail = (1 - confidence) / 2
    deltas.sort()
    delta = Interval(percentile(deltas, tail), percentile(deltas, 1 - tail), method)
    if len(relatives) < (1 - tail) * resamples:
        return delta, Interval(None, None, method, unbounded=True)
    relatives.sort()
    rel = Interval(percentile(relatives, tail), percentile(relatives, 1 - tail), method)
    return delta, rel


def adjust(p_values: Sequence[float | None], method: str) -> list[float | None]:
    """The p-values of one family of comparisons, adjusted for their number (None stays None and
    does not count): "holm", Holm's step-down (controls the family-wise error rate), "bh",
    Benjamini-Hochberg's step-up (the false discovery rate; scipy's false_discovery_control),
    "none". Reject where the adjusted p < alpha."""
    if method not in ADJUSTMENTS:
        raise ValueError(f"unknown adjustment {method!r}: choose from {', '.join(ADJUSTMENTS)}")
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    out: list[float | None] = list(p_values)
    m = len(present)
    if method == "none" or m == 0:
        return out
    if method == "holm":
        running = 0.0
        for rank, (p, i) in enumerate(present):
            running = max(running, min(1.0, (m - rank) * p))
            out[i] = running
    else:
        running = 1.0
        for rank in range(m - 1, -1, -1):
            p, i = present[rank]
            running = min(running, 1.0, m / (rank + 1) * p)
            out[i] = running
    return out


def difference(
    base: Values,
    new: Values,
    confidence: float = DEFAULT_CONFIDENCE,
    ci: str = "parametric",
) -> Difference | None:
    """The comparison of two samples; None when either is empty. With n < 2 on a side only
    the difference of means is known (no interval, no t-test). `ci`: "parametric" (Welch's
    interval of delta, Fieller's of the relative change) or "bootstrap" (both by the percentile
    bootstrap); the tests (Welch, Mann-Whitney) are the same either way."""
    if ci not in ("parametric", "bootstrap"):
        raise ValueError(f"unknown interval method {ci!r}: parametric or bootstrap")
    a, b = _clean(base), _clean(new)
    if not a or not b:
        return None
    delta = _mean(b) - _mean(a)
    p = df = low = high = None
    rel: Interval | None = None
    method = PARAMETRIC
    if len(a) >= 2 and len(b) >= 2:
        p, df, low, high = welch(a, b, confidence)
        rel = relative_interval(a, b, confidence)
        booted = bootstrap(a, b, confidence) if ci == "bootstrap" else None
        if booted is not None:
            low, high = booted[0].low, booted[0].high
            rel, method = booted[1], booted[0].method
    elif ci == "bootstrap":
        method = bootstrap_method()
    return Difference(
        n_base=len(a),
        n_new=len(b),
        delta=delta,
        ci_low=low,
        ci_high=high,
        df=df,
        welch_p=p,
        rank_p=mann_whitney(a, b),
        hedges_g=hedges_g(a, b),
        base_mean=_mean(a),
        confidence=confidence,
        relative_interval=rel,
        interval_method=method,
    )
