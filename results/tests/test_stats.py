"""Unit tier: the statistics against known values (textbook examples, scipy, hand formulas) and a
seeded simulation of the confidence interval's coverage."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import stats as st

from mongobench_results import stats

pytestmark = pytest.mark.unit

# R's t.test (Welch by default) on two samples of 10, as printed in a published answer:
# t = -1.8325, df = 17.9, p-value = 0.08356, 95% CI of x - y: [-2.1469104, 0.1469104].
R_X = [11, 9, 10, 11, 10, 12, 9, 11, 12, 9]
R_Y = [11, 13, 10, 13, 12, 9, 11, 12, 12, 11]
# Unequal variances and sizes (the third example of the Welch's t-test article).
EX3_A = [19.8, 20.4, 19.6, 17.8, 18.5, 18.9, 18.3, 18.9, 19.5, 22.0]
EX3_B = [
    28.2,
    26.6,
    20.1,
    23.3,
    25.2,
    22.1,
    17.7,
    27.6,
    20.6,
    13.7,
    23.2,
    17.5,
    20.6,
    18.0,
    23.9,
    21.6,
    24.3,
    20.4,
    23.9,
    13.3,
]


def test_mean_ci_of_a_textbook_sample() -> None:
    s = stats.summarise([1, 2, 3, 4, 5])
    # mean 3, SD sqrt(2.5), t(0.975, 4) = 2.776445: 3 -/+ 2.776445 * sqrt(2.5/5)
    assert (s.n, s.mean) == (5, 3.0)
    assert s.sd == pytest.approx(math.sqrt(2.5))
    assert s.ci_low == pytest.approx(3 - 2.776445 * math.sqrt(0.5), abs=1e-5)
    assert s.ci_high == pytest.approx(3 + 2.776445 * math.sqrt(0.5), abs=1e-5)
    assert s.cv == pytest.approx(math.sqrt(2.5) / 3)


def test_small_samples_have_no_interval() -> None:
    assert stats.summarise([]).mean is None
    one = stats.summarise([7.0])
    assert (one.n, one.mean, one.sd, one.ci_low) == (1, 7.0, None, None)
    constant = stats.summarise([5.0, 5.0, 5.0])
    assert (constant.sd, constant.ci_low, constant.ci_high) == (0.0, 5.0, 5.0)


def test_welch_matches_r_t_test() -> None:
    # welch(base, new) is about new - base: base = y, new = x gives R's x - y.
    p, df, low, high = stats.welch(R_Y, R_X)
    assert df == pytest.approx(17.9, abs=0.005)
    assert p == pytest.approx(0.08356, abs=5e-6)
    assert low == pytest.approx(-2.1469104, abs=1e-6)
    assert high == pytest.approx(0.1469104, abs=1e-6)


def test_welch_with_unequal_variances_and_sizes_is_not_students_test() -> None:
    p, df, low, high = stats.welch(EX3_A, EX3_B)
    # The Welch-Satterthwaite interval by hand: delta -/+ t(0.975, df) * sqrt(s1^2/n1 + s2^2/n2)
    a, b = np.array(EX3_A), np.array(EX3_B)
    v1, v2 = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    ws_df = (v1 + v2) ** 2 / (v1**2 / (a.size - 1) + v2**2 / (b.size - 1))
    half = st.t.ppf(0.975, ws_df) * math.sqrt(v1 + v2)
    delta = b.mean() - a.mean()
    assert df == pytest.approx(ws_df) and df == pytest.approx(24.5, abs=0.05)
    assert (low, high) == (pytest.approx(delta - half), pytest.approx(delta + half))
    assert p == pytest.approx(2 * st.t.sf(delta / math.sqrt(v1 + v2), ws_df))
    assert p == pytest.approx(0.035, abs=0.001)
    # Student's pooled test, which assumes equal variances, would call it insignificant.
    student = st.ttest_ind(EX3_A, EX3_B, equal_var=True).pvalue
    assert student > 0.1 > 0.05 > p


def test_difference_reports_every_figure_of_new_minus_baseline() -> None:
    d = stats.difference(EX3_A, EX3_B)
    assert d is not None
    assert d.delta == pytest.approx(np.mean(EX3_B) - np.mean(EX3_A))
    assert d.relative == pytest.approx(d.delta / np.mean(EX3_A))
    assert d.welch_p == pytest.approx(stats.welch(EX3_A, EX3_B)[0])
    assert (d.ci_low, d.ci_high) == pytest.approx(stats.welch(EX3_A, EX3_B)[2:])
    assert d.rank_p == pytest.approx(st.mannwhitneyu(EX3_B, EX3_A).pvalue)
    assert d.ci_low is not None and d.ci_low < d.delta < (d.ci_high or 0)
    rel = d.relative_ci
    # Fieller's interval of the ratio, less one (checked against scipy's t below): wider than
    # Welch's interval over the baseline's mean, which took that mean as exact.
    ratio = stats.ratio_interval(EX3_A, EX3_B)
    assert ratio is not None and ratio.bounds is not None
    assert rel == pytest.approx((ratio.bounds[0] - 1, ratio.bounds[1] - 1))
    assert rel[0] < d.relative < rel[1]
    assert rel[1] - rel[0] > (d.ci_high - d.ci_low) / np.mean(EX3_A)


def test_mann_whitney_is_exact_for_small_samples() -> None:
    # Completely separated samples: p = 2 / C(n1 + n2, n1).
    assert stats.mann_whitney([1, 2, 3], [4, 5, 6]) == pytest.approx(2 / 20)
    assert stats.mann_whitney([1, 2, 3, 4], [5, 6, 7, 8]) == pytest.approx(2 / 70)
    assert stats.mann_whitney([3, 3, 3], [3, 3, 3]) == 1.0
    # benchstat's table: 3 a side can never reach 0.05, 4 a side can.
    assert stats.rank_test_min_samples(0.05) == 4
    assert stats.rank_test_min_samples(0.1) == 3


def test_hedges_correction_matches_the_table_and_its_approximation() -> None:
    # Hedges & Olkin (1985), Table 2: J(8) = 0.9027, J(10) = 0.9227, J(20) = 0.9619.
    assert stats.hedges_j(8) == pytest.approx(0.9027, abs=5e-5)
    assert stats.hedges_j(10) == pytest.approx(0.9227, abs=5e-5)
    assert stats.hedges_j(20) == pytest.approx(0.9619, abs=5e-5)
    for df in (8, 30, 100):  # the usual approximation 1 - 3 / (4 df - 1) is close ...
        assert stats.hedges_j(df) == pytest.approx(1 - 3 / (4 * df - 1), rel=1e-3)
    # ... but not exact where benchmarks live: 3 repetitions a side (df 4): 0.7979, not 0.8.
    assert stats.hedges_j(4) == pytest.approx(0.7979, abs=5e-5)
    with pytest.raises(ValueError):
        stats.hedges_j(1)


def _sample(mean: float, sd: float, n: int, seed: int) -> list[float]:
    """n values with exactly this mean and sample SD."""
    z = np.random.default_rng(seed).normal(size=n)
    z = (z - z.mean()) / z.std(ddof=1)
    return list(mean + sd * z)


def test_hedges_g_of_the_textbook_example() -> None:
    # Borenstein et al., Introduction to Meta-Analysis, ch. 4: means 103 vs 100, SDs 5.5 and
    # 4.5, n = 50 each: d = 0.5970, J = 0.9923, g = 0.5924.
    treated, control = _sample(103, 5.5, 50, 1), _sample(100, 4.5, 50, 2)
    g = stats.hedges_g(control, treated)
    assert g == pytest.approx(0.5924, abs=5e-4)
    assert stats.hedges_g(treated, control) == pytest.approx(-0.5924, abs=5e-4)
    # The small-sample correction matters with benchmark-sized samples: n = 3 a side.
    small_a, small_b = _sample(100, 5, 3, 3), _sample(110, 5, 3, 4)
    d = 10 / 5
    assert stats.hedges_g(small_a, small_b) == pytest.approx(d * stats.hedges_j(4))
    assert stats.hedges_g(small_a, small_b) == pytest.approx(2 * 0.7979, abs=1e-4)


def test_constant_samples_differ_exactly_or_not_at_all() -> None:
    assert stats.welch([5, 5, 5], [5, 5, 5])[0] == 1.0
    p, _, low, high = stats.welch([5, 5, 5], [6, 6, 6])
    assert (p, low, high) == (0.0, 1.0, 1.0)
    assert stats.hedges_g([5, 5, 5], [6, 6, 6]) is None  # no spread: no effect size


def test_one_measurement_gives_a_difference_but_no_test() -> None:
    d = stats.difference([100.0], [110.0, 111.0])
    assert d is not None and d.delta == pytest.approx(10.5)
    assert (d.welch_p, d.ci_low, d.hedges_g) == (None, None, None)
    assert stats.difference([], [1.0]) is None


def test_welch_interval_covers_the_true_difference_95_percent_of_the_time() -> None:
    """Seeded simulation: 4,000 experiments with unequal variances and sizes (n = 5 vs 8, SD 1
    vs 3): the 95% Welch-Satterthwaite interval holds the true difference (2.0) in about 95% of
    them. A pooled-variance interval, for contrast, is too narrow here."""
    rng = random.Random(20261120)
    trials, covered = 4000, 0
    bases, news = [], []
    for _ in range(trials):
        base = [rng.gauss(10.0, 3.0) for _ in range(5)]
        new = [rng.gauss(12.0, 1.0) for _ in range(8)]
        # welch() is the interval difference() reports (test above); calling it alone skips
        # the rank test and the effect size this property does not need (half the time).
        _, _, low, high = stats.welch(base, new)
        covered += low <= 2.0 <= high
        bases.append(base)
        news.append(new)
    coverage = covered / trials
    # Binomial SD at 95% over 4,000 trials is 0.0034: +-0.015 is more than 4 SD.
    assert 0.935 <= coverage <= 0.965, coverage
    # The pooled (Student) interval of every trial at once, by its textbook formula (the same
    # numbers as scipy's ttest_ind(equal_var=True), without its per-call overhead).
    a, b = np.asarray(bases), np.asarray(news)
    n1, n2 = a.shape[1], b.shape[1]
    pooled_sd = np.sqrt(
        ((n1 - 1) * a.var(axis=1, ddof=1) + (n2 - 1) * b.var(axis=1, ddof=1)) / (n1 + n2 - 2)
    )
    half = st.t.ppf(0.975, n1 + n2 - 2) * pooled_sd * math.sqrt(1 / n1 + 1 / n2)
    delta = b.mean(axis=1) - a.mean(axis=1)
    pooled_covered = int(np.sum((delta - half <= 2.0) & (delta + half >= 2.0)))
    assert pooled_covered / trials < 0.93  # why Welch: equal variances are not assumed


# --- the library's own distributions against scipy (the reference it replaces) -------------------


@pytest.mark.parametrize("df", [1, 1.5, 2, 3, 4.7, 8, 17.9, 30, 120, 1e4])
def test_t_distribution_matches_scipy(df: float) -> None:
    # abs: scipy's own t.sf is off by 3e-9 near t = 0 for df = 1 (the closed forms below agree
    # with the library there).
    for t in (0.0, 1e-8, 0.01, 0.5, 1.0, 1.96, 2.5, 4.0, 10.0, 60.0, 1e3):
        assert stats.t_two_sided(t, df) == pytest.approx(2 * st.t.sf(t, df), rel=1e-9, abs=5e-9)
    for confidence in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999):
        want = st.t.ppf((1 + confidence) / 2, df)
        assert stats.t_quantile(confidence, df) == pytest.approx(want, rel=1e-9)


def test_t_distribution_matches_its_closed_forms() -> None:
    for t in (1e-8, 0.3, 1.0, 12.7, 1e4):
        # df = 1 is Cauchy: P(|T| >= t) = 1 - 2 atan(t) / pi; df = 2: 1 - t / sqrt(2 + t^2).
        assert stats.t_two_sided(t, 1) == pytest.approx(1 - 2 * math.atan(t) / math.pi, rel=1e-13)
        assert stats.t_two_sided(t, 2) == pytest.approx(1 - t / math.sqrt(2 + t * t), rel=1e-12)
    assert stats.t_quantile(0.95, 1) == pytest.approx(math.tan(0.975 * math.pi - math.pi / 2))


def _random_samples(seed: int) -> tuple[list[float], list[float]]:
    rng = np.random.default_rng(seed)
    n1, n2 = int(rng.integers(2, 14)), int(rng.integers(2, 14))
    base = rng.normal(1000, rng.uniform(1, 80), n1)
    new = rng.normal(1000 + rng.uniform(-60, 60), rng.uniform(1, 80), n2)
    if seed % 3 == 0:  # benchmark figures are often rounded: ties (never a constant sample, see
        # test_constant_samples_differ_exactly_or_not_at_all for those)
        base, new = np.round(base / 5) * 5, np.round(new / 5) * 5
        base[0], new[0] = base[0] - 5, new[0] + 5
    return list(base), list(new)


@pytest.mark.parametrize("seed", range(60))
def test_every_figure_of_a_difference_matches_scipy(seed: int) -> None:
    base, new = _random_samples(seed)
    d = stats.difference(base, new)
    assert d is not None
    welch = st.ttest_ind(new, base, equal_var=False)
    ci = welch.confidence_interval(0.95)
    assert d.welch_p == pytest.approx(welch.pvalue, rel=1e-9, abs=1e-15)
    assert d.df == pytest.approx(welch.df, rel=1e-12)
    assert (d.ci_low, d.ci_high) == (
        pytest.approx(ci.low, rel=1e-9),
        pytest.approx(ci.high, rel=1e-9),
    )
    assert d.rank_p == pytest.approx(st.mannwhitneyu(new, base).pvalue, rel=1e-9, abs=1e-15)
    s = stats.summarise(new)
    low, high = st.t.interval(0.95, len(new) - 1, loc=np.mean(new), scale=st.sem(new))
    assert (s.ci_low, s.ci_high) == (pytest.approx(low, rel=1e-12), pytest.approx(high, rel=1e-12))


@pytest.mark.parametrize(("n1", "n2"), [(1, 1), (2, 5), (3, 3), (4, 4), (5, 8), (8, 30), (3, 60)])
def test_the_exact_rank_test_matches_scipy_for_every_ordering_statistic(n1: int, n2: int) -> None:
    """Without ties and with a side of at most 8, both use the exact U distribution: every
    achievable U (interleavings of two sorted samples) gives scipy's p."""
    rng = random.Random(n1 * 100 + n2)
    for _ in range(25):
        values = rng.sample(range(1000), n1 + n2)
        x, y = values[:n1], values[n1:]
        assert stats.mann_whitney(y, x) == pytest.approx(
            st.mannwhitneyu(x, y, method="auto").pvalue, rel=1e-12
        )


def test_the_rank_test_uses_the_normal_approximation_with_ties_or_large_samples() -> None:
    ties_base, ties_new = [1.0, 2.0, 2.0, 3.0, 5.0], [2.0, 3.0, 3.0, 6.0, 7.0, 8.0]
    assert stats.mann_whitney(ties_base, ties_new) == pytest.approx(
        st.mannwhitneyu(ties_new, ties_base).pvalue, rel=1e-12
    )
    rng = random.Random(7)
    big_base = [rng.gauss(0, 1) for _ in range(20)]
    big_new = [rng.gauss(0.5, 1) for _ in range(25)]
    assert stats.mann_whitney(big_base, big_new) == pytest.approx(
        st.mannwhitneyu(big_new, big_base).pvalue, rel=1e-12
    )


def test_hedges_correction_matches_scipys_gamma_functions() -> None:
    from scipy import special

    for df in (2, 3.5, 4, 10, 57, 1000):
        want = math.exp(special.gammaln(df / 2) - special.gammaln((df - 1) / 2)) / math.sqrt(df / 2)
        assert stats.hedges_j(df) == pytest.approx(want, rel=1e-13)


# --- the relative change from the ratio of two uncertain means ----------------------------------


def _fieller_statistic(base: list[float], new: list[float], rho: float) -> tuple[float, float]:
    """(y - rho x) / sqrt(v_y + rho^2 v_x) and its Welch df at the estimate, by numpy."""
    a, b = np.asarray(base), np.asarray(new)
    vx, vy = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    r = b.mean() / a.mean()
    df = (vy + r * r * vx) ** 2 / (vy**2 / (b.size - 1) + (r * r * vx) ** 2 / (a.size - 1))
    return (b.mean() - rho * a.mean()) / math.sqrt(vy + rho * rho * vx), df


@pytest.mark.parametrize("seed", range(5))
def test_fieller_bounds_are_where_the_ratio_test_stops_rejecting(seed: int) -> None:
    """Fieller's interval is the set of ratios rho not rejected by the t-test of
    "mean(new) = rho mean(base)": at each bound the statistic sits exactly on scipy's t
    quantile, with opposite signs."""
    rng = np.random.default_rng(seed)
    base = list(rng.normal(1000, 120, 4 + seed))
    new = list(rng.normal(1150, 60, 6))
    interval = stats.ratio_interval(base, new)
    assert interval is not None and interval.bounds is not None
    low, high = interval.bounds
    t_low, df = _fieller_statistic(base, new, low)
    t_high, _ = _fieller_statistic(base, new, high)
    q = st.t.ppf(0.975, df)
    assert t_low == pytest.approx(q, rel=1e-9)
    assert t_high == pytest.approx(-q, rel=1e-9)
    rel = stats.relative_interval(base, new)
    assert rel is not None and rel.bounds == pytest.approx((low - 1, high - 1))
    d = stats.difference(base, new)
    assert d is not None and d.relative_ci == pytest.approx((low - 1, high - 1))


def test_the_ratio_interval_covers_the_true_change_where_the_fixed_baseline_did_not() -> None:
    """Seeded simulation: a noisy baseline (CV 25%, n = 8) against a steady new configuration
    twice as fast (CV 5%). Fieller's interval holds the true +100% in about 95% of 3,000
    experiments; dividing Welch's interval by the baseline's mean as if it were exact (what the
    table printed before) holds it in under 80%."""
    rng = np.random.default_rng(20261126)
    trials, fieller, fixed = 3000, 0, 0
    for _ in range(trials):
        base, new = list(rng.normal(100, 25, 8)), list(rng.normal(200, 10, 8))
        interval = stats.relative_interval(base, new)
        assert interval is not None and interval.bounds is not None
        fieller += interval.bounds[0] <= 1.0 <= interval.bounds[1]
        _, _, low, high = stats.welch(base, new)
        mean = sum(base) / len(base)
        fixed += low / mean <= 1.0 <= high / mean
    # Binomial SD at 95% over 3,000 trials is 0.004: +-0.015 is more than 3.5 SD.
    assert 0.935 <= fieller / trials <= 0.965, fieller / trials
    assert fixed / trials < 0.80, fixed / trials


def test_a_baseline_indistinguishable_from_zero_gives_an_unbounded_interval() -> None:
    # Mean 0.67, SE 0.88: not significantly different from 0, so no ratio is excluded.
    d = stats.difference([1.0, -1.0, 2.0], [3.0, 4.0, 5.0])
    assert d is not None and d.relative_interval is not None
    assert d.relative_unbounded and d.relative_ci is None
    assert d.relative_interval.method == stats.FIELLER
    # Two constant samples: the ratio is exact.
    exact = stats.ratio_interval([4.0, 4.0], [5.0, 5.0, 5.0])
    assert exact is not None and exact.bounds == (1.25, 1.25)


def test_a_negative_baseline_keeps_the_relative_change_relative_to_its_size() -> None:
    base, new = [-100.0, -104.0, -96.0], [-90.0, -91.0, -89.0]
    d = stats.difference(base, new)
    assert d is not None and d.relative == pytest.approx(0.1)
    ratio = stats.ratio_interval(base, new)
    assert ratio is not None and ratio.bounds is not None and d.relative_ci is not None
    # delta / |x| = 1 - rho when x < 0.
    assert d.relative_ci == pytest.approx((1 - ratio.bounds[1], 1 - ratio.bounds[0]))
    assert d.relative_ci[0] < 0.1 < d.relative_ci[1]


# --- the percentile bootstrap ---------------------------------------------------------------------


def test_the_bootstrap_matches_scipys_percentile_bootstrap() -> None:
    """Both resample each sample on its own; with 20,000 resamples each (different generators)
    the percentiles of the same bootstrap distribution agree within a few hundredths of the
    interval's width."""
    rng = np.random.default_rng(7)
    base, new = list(rng.lognormal(7, 0.15, 9)), list(rng.lognormal(7.1, 0.1, 7))
    booted = stats.bootstrap(base, new, resamples=20_000, seed=3)
    assert booted is not None
    delta, rel = booted

    def relative(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        mx = x.mean(axis=axis)
        return (y.mean(axis=axis) - mx) / np.abs(mx)

    for mine, statistic in (
        (delta, lambda x, y, axis=-1: y.mean(axis=axis) - x.mean(axis=axis)),
        (rel, relative),
    ):
        ref = st.bootstrap(
            (np.asarray(base), np.asarray(new)),
            statistic,
            paired=False,
            method="percentile",
            n_resamples=20_000,
            rng=np.random.default_rng(11),
        ).confidence_interval
        width = ref.high - ref.low
        assert mine.low == pytest.approx(ref.low, abs=0.03 * width)
        assert mine.high == pytest.approx(ref.high, abs=0.03 * width)


def test_the_bootstrap_is_reproducible_and_names_its_resamples_and_seed() -> None:
    base, new = [100.0, 96.0, 108.0, 101.0], [111.0, 108.0, 118.0, 110.0]
    once = stats.difference(base, new, ci="bootstrap")
    again = stats.difference(base, new, ci="bootstrap")
    assert once is not None and once == again
    assert once.interval_method == "percentile bootstrap (2000 resamples, seed 25)"
    assert once.relative_interval is not None
    assert once.relative_interval.method == once.interval_method
    parametric = stats.difference(base, new)
    assert parametric is not None and parametric.relative_ci != once.relative_ci
    # The tests behind the verdict do not change with the interval.
    assert (parametric.welch_p, parametric.rank_p) == (once.welch_p, once.rank_p)
    with pytest.raises(ValueError, match="parametric or bootstrap"):
        stats.difference(base, new, ci="bca")


# --- multiple comparisons ------------------------------------------------------------------------


def test_holm_and_bh_of_a_textbook_family() -> None:
    # R: p.adjust(c(0.01, 0.02, 0.03, 0.04, 0.05), "holm") and "BH".
    ps = [0.01, 0.02, 0.03, 0.04, 0.05]
    assert stats.adjust(ps, "holm") == pytest.approx([0.05, 0.08, 0.09, 0.09, 0.09])
    assert stats.adjust(ps, "bh") == pytest.approx([0.05] * 5)
    assert stats.adjust([0.2, None, 0.01], "holm") == pytest.approx([0.2, None, 0.02])
    assert stats.adjust(ps, "none") == ps
    with pytest.raises(ValueError, match="holm, bh, none"):
        stats.adjust(ps, "bonferroni")


@pytest.mark.parametrize("seed", range(20))
def test_holm_rejects_what_the_step_down_procedure_rejects(seed: int) -> None:
    """Holm's procedure as written (sort, reject while p_(k) <= alpha / (m - k + 1), stop at the
    first that is not) against the adjusted p-values at three alphas; BH against scipy."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 15))
    ps = list(np.concatenate([rng.uniform(0, 0.02, m // 2), rng.uniform(0, 1, m - m // 2)]))
    holm = stats.adjust(ps, "holm")
    for alpha in (0.01, 0.05, 0.1):
        rejected = set()
        for k, i in enumerate(sorted(range(m), key=ps.__getitem__)):
            if ps[i] > alpha / (m - k):
                break
            rejected.add(i)
        assert {i for i, p in enumerate(holm) if p is not None and p <= alpha} == rejected
    bh = stats.adjust(ps, "bh")
    assert bh == pytest.approx(list(st.false_discovery_control(ps, method="bh")), rel=1e-12)
