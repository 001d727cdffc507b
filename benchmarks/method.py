"""make bench-method: the comparison method on trials whose truth is known.

Every figure draws trials from a seeded generator and asks the verdict `mongobench compare`
gives (compare.significance: Welch's test, the p-values of one table adjusted together with
Holm's method, no verdict below compare.MIN_N trials a side), so what is measured is the method
users get, not a copy of it. No assertion: it prints figures and what they rest on. Two
figures run on this machine (the Duet's and the noisy neighbour's); the others are simulated.

The noise: each trial's throughput is log-normal (right-skewed, as throughput on a shared machine
is) around the configuration's true mean, with the coefficient of variation the project measured
on its own plane, per workload (PLANE_CVS), or the one a figure names (the 5% change at CV 5%).

Figures, in the order printed; the last line joins their short forms:
- A/A: two identical configurations, a table of workloads A-F (10 rounds each), verdict "no
  difference" in how many of the comparisons;
- a 5% throughput change at a CV of 5%, 10 rounds a side, detected (significant, right sign) in
  how many comparisons, in the same table shape;
- adaptive repetitions (adaptive.decide, the operator's rule, every cell of the table until its
  interval is narrow enough or max is reached) against 20 fixed rounds: the same verdict in how
  many comparisons, with how many fewer trials.
- Duet against RandomizedRounds: the smallest change each detects with 80% power at the same
  number of trials, measured side by side in one run on this plane (method_duet_plane.py: an
  A/A Duet and an A/A RandomizedRounds experiment of BENCH_DUET_ROUNDS rounds, real runs, a few
  minutes; BENCH_DUET_PLANE=0 skips it), then simulated at 10 trials on a model whose shared
  noise is assumed (method_duet.py);
- the validity checks (benchmarks/method_validity.py): warm-ups of known length found within 2 s
  in simulated per-second series, and steps with a CPU hog on the database's node flagged
  NoisyNode on this machine (real cgroups and Prometheus: minutes; BENCH_NOISY_STEPS=0 skips it).
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

from mongobench_results import adaptive, compare, stats

SEED = 20261126
WORKLOADS = ("a", "b", "c", "d", "e", "f")
# Throughput CVs per workload measured on the local plane: `make demo` with --repetitions 5 on
# 2026-11-26 (BenchmarkRun demo-1client: 1 client x 2 threads, YCSB against FerretDB, 500
# operations a step) on a shared 2-core build machine at a load average of 10-25 from other
# builds; sample CVs of 5 repetitions (A-D, F) and 3 of E (its 4th timed out with 0 ops/s).
# That is the noise this plane has under load, not a quiet machine's: the A/A figure uses it.
PLANE_CVS = {"a": 0.580, "b": 0.612, "c": 0.426, "d": 0.691, "e": 0.508, "f": 0.530}
TABLES = 300  # simulated tables (experiments) per figure: 1,800 comparisons
ROUNDS = 10
FIXED = 20  # the fixed design adaptive repetitions are held against
POLICY = adaptive.Policy(min=5, max=FIXED, metric="throughput", relative_half_width=0.05)


@dataclass
class Figure:
    short: str  # its part of the last line, e.g. "A/A no-difference 99.1%"
    lines: list[str] = field(default_factory=list)  # what it rests on, printed above


def trials(rng: random.Random, mean: float, cv: float, n: int) -> list[float]:
    """n log-normal trials with the given mean and coefficient of variation."""
    sigma = math.sqrt(math.log1p(cv * cv))
    mu = math.log(mean) - sigma * sigma / 2
    return [rng.lognormvariate(mu, sigma) for _ in range(n)]


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%"


def aa_no_difference() -> Figure:
    rng = random.Random(SEED)
    same = same_raw = total = 0
    for _ in range(TABLES):
        pairs = [
            (trials(rng, 1000, cv, ROUNDS), trials(rng, 1000, cv, ROUNDS))
            for cv in PLANE_CVS.values()
        ]
        same += sum(1 for v in compare.significance(pairs) if v is False)
        same_raw += sum(1 for v in compare.significance(pairs, adjust="none") if v is False)
        total += len(pairs)
    return Figure(
        f"A/A no-difference {_pct(same, total)}",
        [
            f"A/A: {total} comparisons in {TABLES} tables of workloads A-F, {ROUNDS} rounds, "
            "plane CVs " + ", ".join(f"{w.upper()} {100 * cv:.1f}%" for w, cv in PLANE_CVS.items()),
            f"  no difference: {_pct(same, total)} with Holm across each table's 6 rows "
            f"(unadjusted: {_pct(same_raw, total)})",
        ],
    )


def _power(n: int, effect: float, cv: float, alpha: float = 0.05) -> float:
    """Welch's (here Student's: equal n and SD) two-sided power, from the noncentral t."""
    from scipy import stats as scipy_stats  # seconds to import: only when a power is asked

    df = 2 * n - 2
    nc = effect / (cv * math.sqrt(2 / n))
    q = scipy_stats.t.ppf(1 - alpha / 2, df)
    return float(scipy_stats.nct.sf(q, df, nc) + scipy_stats.nct.cdf(-q, df, nc))


def change_detected() -> Figure:
    rng = random.Random(SEED + 1)
    cv, shift = 0.05, 0.05
    found = {"holm": 0, "none": 0}
    total = 0
    for _ in range(TABLES):
        pairs = [
            (trials(rng, 1000, cv, ROUNDS), trials(rng, 1000 * (1 + shift), cv, ROUNDS))
            for _ in WORKLOADS
        ]
        for adjust in found:
            verdicts = _verdicts(pairs, adjust)
            found[adjust] += sum(1 for v in verdicts if v == "better")
        total += len(pairs)
    needed = next(n for n in range(2, 200) if _power(n, shift, cv) >= 0.8)
    # No level-0.05 two-sided test does better than the z-test that knows the variance.
    bound = NormalDist().cdf(shift / (cv * math.sqrt(2 / ROUNDS)) - NormalDist().inv_cdf(0.975))
    return Figure(
        f"5% change detected {_pct(found['holm'], total)}",
        [
            f"5% change: {total} comparisons in {TABLES} tables of 6 rows, every row +5%, CV 5%, "
            f"{ROUNDS} rounds a side",
            f"  detected: {_pct(found['holm'], total)} with Holm across the table; "
            f"{_pct(found['none'], total)} as a table of one comparison",
            f"  the t-test's power for one comparison (noncentral t): "
            f"{100 * _power(ROUNDS, shift, cv):.1f}%; no test can pass {100 * bound:.0f}% (the "
            f"z-test knowing the variance); 80% needs {needed} rounds a side, or a CV of "
            f"{100 * _cv_for_power(ROUNDS, shift):.1f}% at {ROUNDS}",
        ],
    )


def _cv_for_power(n: int, effect: float, target: float = 0.8) -> float:
    lo, hi = 0.001, 0.5
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _power(n, effect, mid) >= target else (lo, mid)
    return lo


# True shifts of the adaptive figure's cases, drawn uniformly: a third none, the rest from below
# to well above what 20 trials at CV 5% resolve.
SHIFTS = (0.0, 0.0, 0.0, 0.02, -0.02, 0.05, -0.05, 0.10, -0.10, 0.20, -0.20)
ADAPTIVE_CV = 0.05


@dataclass
class _Agreement:
    same: int = 0
    total: int = 0
    trials: int = 0
    by_shift: dict[float, list[int]] = field(default_factory=dict)  # |shift| -> [same, total]

    def add(self, shifts: Sequence[float], early: Sequence[str], fixed: Sequence[str]) -> None:
        for shift, x, y in zip(shifts, early, fixed, strict=True):
            counts = self.by_shift.setdefault(abs(shift), [0, 0])
            counts[0] += x == y
            counts[1] += 1
            self.same += x == y
            self.total += 1

    def saved(self) -> float:
        return 1 - self.trials / (self.total * 2 * FIXED)


def _stop(values: Sequence[float]) -> int:
    """Trials a BenchmarkRun's workload takes under POLICY: the first n at which it is done."""
    return next((n for n in range(1, FIXED + 1) if adaptive.decide(POLICY, values[:n]).done), FIXED)


def _adaptive(rng: random.Random, cvs: Sequence[float]) -> tuple[_Agreement, _Agreement]:
    """Tables of len(cvs) workloads compared between two runs: per workload as a BenchmarkRun
    applies the policy, and in rounds until every cell is done as an experiment does."""
    per_run, in_rounds = _Agreement(), _Agreement()
    for _ in range(TABLES):
        shifts = [rng.choice(SHIFTS) for _ in cvs]
        cells = [
            (trials(rng, 1000, cv, FIXED), trials(rng, 1000 * (1 + shift), cv, FIXED))
            for cv, shift in zip(cvs, shifts, strict=True)
        ]
        fixed = _verdicts(cells)
        stops = [(_stop(a), _stop(b)) for a, b in cells]
        per_run.add(
            shifts,
            _verdicts([(a[:i], b[:j]) for (a, b), (i, j) in zip(cells, stops, strict=True)]),
            fixed,
        )
        per_run.trials += sum(i + j for i, j in stops)
        rounds = next(
            (
                n
                for n in range(1, FIXED + 1)
                if adaptive.all_done(POLICY, [v[:n] for pair in cells for v in pair])
            ),
            FIXED,
        )
        in_rounds.add(shifts, _verdicts([(a[:rounds], b[:rounds]) for a, b in cells]), fixed)
        in_rounds.trials += rounds * 2 * len(cells)
    return per_run, in_rounds


def adaptive_same_verdict() -> Figure:
    """Two BenchmarkRuns compared, each with adaptive repetitions: 20 trials drawn for every
    workload of both runs, each workload of each run stopping at its own first done n (as a run
    applies the policy); the comparison at those n is held against the one of all 20. At CV 5%
    (the figure), and at the plane's CVs (beside it); the experiment's rule (rounds until every
    cell is done, adaptive.all_done) too."""
    rng = random.Random(SEED + 2)
    run, rounds = _adaptive(rng, [ADAPTIVE_CV] * len(WORKLOADS))
    plane_run, plane_rounds = _adaptive(rng, list(PLANE_CVS.values()))
    shifts = ", ".join(
        f"{100 * s:.0f}% {_pct(c[0], c[1])}" for s, c in sorted(run.by_shift.items())
    )
    return Figure(
        f"adaptive same verdict {_pct(run.same, run.total)} with {100 * run.saved():.0f}% "
        "fewer trials",
        [
            f"adaptive: {run.total} comparisons of two runs' 6 workloads at CV "
            f"{100 * ADAPTIVE_CV:.0f}%, true shifts drawn from "
            f"{', '.join(f'{100 * s:+.0f}%' for s in SHIFTS)}; policy min {POLICY.min}, max "
            f"{POLICY.max}, until the {POLICY.metric} mean's {100 * POLICY.confidence:.0f}% "
            f"interval is within +-{100 * (POLICY.relative_half_width or 0):.0f}%",
            f"  per workload (BenchmarkRun): same verdict as {FIXED} fixed repetitions "
            f"{_pct(run.same, run.total)}, {100 * run.saved():.0f}% fewer trials; by |shift|: "
            + shifts,
            f"  rounds until every cell is done (BenchmarkExperiment): "
            f"{_pct(rounds.same, rounds.total)}, {100 * rounds.saved():.0f}% fewer trials",
            f"  at the plane's CVs: per workload {_pct(plane_run.same, plane_run.total)}, "
            f"{100 * plane_run.saved():.0f}% fewer trials; in rounds "
            f"{_pct(plane_rounds.same, plane_rounds.total)}, "
            f"{100 * plane_rounds.saved():.0f}% fewer (an interval of +-"
            f"{100 * (POLICY.relative_half_width or 0):.0f}% needs about "
            f"{_trials_for_width(min(PLANE_CVS.values()))} trials at the plane's lowest CV)",
        ],
    )


def _trials_for_width(cv: float) -> int:
    """Trials whose mean's interval is within POLICY's half-width at this CV (t quantile)."""
    width = POLICY.relative_half_width or 0.0
    return next(
        (
            n
            for n in range(2, 10_000)
            if stats.t_quantile(POLICY.confidence, n - 1) * cv / math.sqrt(n) <= width
        ),
        10_000,
    )


def _verdicts(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]], adjust: compare.Adjust = "holm"
) -> list[str]:
    """'better', 'worse' or '~' per (baseline, new) pair, as compare's verdict column says it
    for throughput."""
    out = []
    for (a, b), significant in zip(pairs, compare.significance(pairs, adjust=adjust), strict=True):
        higher = sum(b) / len(b) > sum(a) / len(a)
        out.append(("better" if higher else "worse") if significant else "~")
    return out


def warmup_found() -> Figure:
    import method_validity  # lazily: it needs the local plane's modules on the path

    w = method_validity.warmup_found_rate()
    return Figure(
        f"warm-up found {100 * w.found:.1f}%",
        [
            f"warm-up found within {method_validity.TOLERANCE_S:g} s: {w.found:.1%} of {w.trials} "
            f"simulated series; steady series judged not steady: {w.false_alarms:.1%}"
        ],
    )


def noisy_neighbour_flagged() -> Figure:
    import method_validity

    steps = int(os.environ.get("BENCH_NOISY_STEPS", "10"))
    if steps <= 0:
        return Figure(
            "noisy neighbour not measured", ["noisy neighbour: skipped (BENCH_NOISY_STEPS=0)"]
        )
    n = method_validity.noisy_neighbour_rate(steps)
    return Figure(
        f"noisy neighbour flagged {100 * n.flagged:.1f}%",
        [
            f"noisy neighbour flagged: {n.flagged:.0%} of {n.steps} steps with a CPU hog on the "
            f"database's node; {n.false_flags:.0%} of {n.steps} steps without it"
        ],
    )


def duet_against_rounds() -> Figure:
    import method_duet  # lazily, as method_validity

    short, lines = method_duet.figure(SEED)
    if os.environ.get("BENCH_DUET_PLANE", "1") == "0":
        return Figure(short, [*lines, "  measured on the plane: skipped (BENCH_DUET_PLANE=0)"])
    import method_duet_plane  # the local plane's modules: only when it is measured

    measured, found = method_duet_plane.figure()
    return Figure(measured, [*found, *lines])


# The figures in the order printed; their short forms make the last line, in this order.
FIGURES: list[Callable[[], Figure]] = [
    aa_no_difference,
    change_detected,
    adaptive_same_verdict,
    duet_against_rounds,
    warmup_found,
    noisy_neighbour_flagged,
]


def main() -> None:
    started = time.perf_counter()
    shorts = []
    for figure in FIGURES:
        f = figure()
        for line in f.lines:
            print(line, flush=True)
        shorts.append(f.short)
    print(f"({time.perf_counter() - started:.1f} s, seed {SEED})")
    print("bench-method: " + ", ".join(shorts))


if __name__ == "__main__":
    main()
