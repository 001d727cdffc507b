"""make bench-method's Duet figure: the smallest change detected with 80% power by a Duet
against RandomizedRounds at the same number of trials, side by side in one run.

Measured (method_duet_plane.py runs the trials; the pure part is here): from an A/A Duet's runs,
each round's paired log ratio B/A (as mongobench_results.duet computes it) and each side's mean
log level; from an A/A RandomizedRounds experiment's runs, each trial's log throughput a side.
Each design's estimator has a standard error from those (the duet: the ratios' SD over
sqrt(rounds), judged by a paired t; RandomizedRounds: Welch's), and the smallest change it
detects with 80% power follows from the noncentral t at its degrees of freedom (the z formula,
(z_0.975 + z_0.8) x SE, printed beside it). The duet's common share is the correlation of A's
and B's per-round levels.

Simulated (`figure`), printed below it: both designs draw from one model of a shared machine,
and each is judged by the code users get (RandomizedRounds: `compare`'s Welch verdict,
compare.significance; Duet: mongobench_results.duet.compare on runs shaped as the operator
writes them). The model, per trial of SECONDS per-second throughputs:

- the machine's state during the trial: a log offset with TRIAL_CV x sqrt(COMMON_SHARE), and
  within the trial an AR(1) swing (SWING_SD, SWING_RHO), both common to whatever runs then;
- the run's own: a log offset with TRIAL_CV x sqrt(1 - COMMON_SHARE), and white noise per
  second (OWN_SD).

RandomizedRounds runs A's and B's trials at different times: each draws its own machine state.
A Duet's pair runs at once on the same nodes: both sides share the machine's draws, and only
their own noise is left in the ratio. COMMON_SHARE is an assumption (the share of trial-to-trial
variance that is the machine's, not the run's), printed with the figure; on a quiet machine it
is lower and the Duet's advantage smaller.
"""

from __future__ import annotations

import math
import random
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mongobench_results import compare, duet, records

TRIALS = 10  # rounds: trials a side, the same for both designs
EXPERIMENTS = 200  # simulated experiments per effect size
SECONDS = 60
TRIAL_CV = 0.05  # the case: CV 5% between trials
COMMON_SHARE = 0.8
SWING_SD, SWING_RHO = 0.05, 0.8
OWN_SD = 0.05
EFFECTS = (0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.10, 0.15)
POWER = 0.8


def _machine(rng: random.Random) -> list[float]:
    """The machine's log level, second by second, during one trial."""
    level = rng.gauss(0, TRIAL_CV * math.sqrt(COMMON_SHARE))
    out, swing = [], 0.0
    for _ in range(SECONDS):
        swing = SWING_RHO * swing + math.sqrt(1 - SWING_RHO**2) * rng.gauss(0, SWING_SD)
        out.append(level + swing)
    return out


def _series(rng: random.Random, machine: list[float], mean: float) -> list[float]:
    """One run's per-second throughput on that machine."""
    own = rng.gauss(0, TRIAL_CV * math.sqrt(1 - COMMON_SHARE))
    return [mean * math.exp(m + own + rng.gauss(0, OWN_SD)) for m in machine]


def _run(pair: str, side: int, series: list[float]) -> dict[str, Any]:
    step = {
        "index": 1,
        "kind": "run",
        "workload": "a",
        "phase": "Succeeded",
        "result": {
            "startAt": "2026-12-07T10:00:00.000000Z",
            "series": {"intervalSeconds": 1.0, "throughput": series},
        },
    }
    return {
        "metadata": {"name": f"{pair}-{side}"},
        "spec": {"duet": {"name": pair, "side": side, "peerParallelism": 1}},
        "status": {"steps": [step]},
    }


def duet_detects(rng: random.Random, effect: float) -> bool:
    runs = []
    for r in range(1, TRIALS + 1):
        machine = _machine(rng)  # one machine state, both sides at once
        runs += [
            _run(f"x-r{r}", 0, _series(rng, machine, 1000.0)),
            _run(f"x-r{r}", 1, _series(rng, machine, 1000.0 * (1 + effect))),
        ]
    row = duet.compare(runs).rows[0]
    return row.verdict == duet.FASTER


def rounds_detects(rng: random.Random, effect: float) -> bool:
    a = [statistics.fmean(_series(rng, _machine(rng), 1000.0)) for _ in range(TRIALS)]
    b = [
        statistics.fmean(_series(rng, _machine(rng), 1000.0 * (1 + effect))) for _ in range(TRIALS)
    ]
    (significant,) = compare.significance([(a, b)])
    return bool(significant) and statistics.fmean(b) > statistics.fmean(a)


def power(detects: Callable[[random.Random, float], bool], effect: float, seed: int) -> float:
    rng = random.Random(f"{seed}:{effect}")
    return sum(detects(rng, effect) for _ in range(EXPERIMENTS)) / EXPERIMENTS


def smallest(detects: Callable[[random.Random, float], bool], seed: int) -> tuple[float, float]:
    """The smallest effect of EFFECTS detected with POWER, and the power there."""
    for effect in EFFECTS:
        p = power(detects, effect, seed)
        if p >= POWER:
            return effect, p
    return math.inf, 0.0


def trial_cv(seed: int) -> float:
    """The simulated trials' CV as RandomizedRounds sees them (machine and run noise)."""
    rng = random.Random(seed)
    values = [statistics.fmean(_series(rng, _machine(rng), 1000.0)) for _ in range(2000)]
    return statistics.stdev(values) / statistics.fmean(values)


def _pct(effect: float) -> str:
    return "none of the tried" if math.isinf(effect) else f"{100 * effect:.3g}%"


def figure(seed: int) -> tuple[str, list[str]]:
    """(the short form, the lines it rests on)."""
    d, dp = smallest(duet_detects, seed)
    r, rp = smallest(rounds_detects, seed)
    aa = power(duet_detects, 0.0, seed)  # an A/A duet: "faster" is a false positive
    short = (
        f"Duet {_pct(d)} vs RandomizedRounds {_pct(r)} at 80% power ({TRIALS} trials each, "
        "simulated)"
    )
    lines = [
        f"smallest change detected at 80% power: Duet {_pct(d)} vs RandomizedRounds {_pct(r)} "
        f"({TRIALS} trials each, simulated)",
        f"  simulated (not measured on the plane): {EXPERIMENTS} experiments per effect of "
        f"{', '.join(_pct(e) for e in EFFECTS)}; power there: Duet {100 * dp:.0f}%, "
        f"RandomizedRounds {100 * rp:.0f}%",
        f"  noise: trials' CV {100 * trial_cv(seed):.1f}% as a sequential design sees it, "
        f"{100 * COMMON_SHARE:.0f}% of the trial variance the machine's (shared by a duet's "
        f"sides, an assumption), per-second swing {100 * SWING_SD:.0f}% (AR {SWING_RHO}) and "
        f"{100 * OWN_SD:.0f}% own noise, {SECONDS} s a trial",
        f"  A/A duets saying 'faster': {100 * aa:.1f}% (one-sided half of a 5% level)",
    ]
    return short, lines


# --- measured on the plane: the estimators' noise from real trials (method_duet_plane.py) -----

Run = Mapping[str, Any]


def duet_trials(runs: Iterable[Run]) -> tuple[list[float], list[float]]:
    """Per valid round of a duet (the pairs duet.compare keeps), A's and B's mean log
    per-second throughput over the intervals both measured in full (duet.paired_intervals):
    B - A is the round's paired log ratio, duet.log_ratios' mean."""
    a, b = [], []
    for pair in duet.pairs(runs):
        if not pair.valid:
            continue
        both = duet.paired_intervals(pair.a.series or {}, pair.b.series or {}, "throughput")
        if both:
            a.append(statistics.fmean(math.log(x) for x, _ in both))
            b.append(statistics.fmean(math.log(y) for _, y in both))
    return a, b


def rounds_trials(runs: Iterable[Run]) -> tuple[list[float], list[float]]:
    """The log throughput of every succeeded measured step of cells 0 (A) and 1 (B) of an
    experiment's runs (named <experiment>-c<cell>-r<repetition>): the trials `compare` weighs."""
    sides: dict[str, list[float]] = {"0": [], "1": []}
    for run in runs:
        cell = re.fullmatch(r".*-c(\d+)-r\d+", str(run["metadata"]["name"]))
        if cell is None or cell[1] not in sides:
            continue
        for step in records.steps(run):
            throughput = (step.result or {}).get("throughput")
            if step.kind == "run" and step.phase == "Succeeded" and throughput:
                sides[cell[1]].append(math.log(float(throughput)))
    return sides["0"], sides["1"]


def smallest_change(se: float, df: float, power: float = POWER, alpha: float = 0.05) -> float:
    """The smallest true log change that a two-sided t test at `alpha`, on an estimator with
    standard error `se` and `df` degrees of freedom, detects with `power` (noncentral t)."""
    from scipy import stats as scipy_stats  # seconds to import: only when a figure is asked

    q = scipy_stats.t.ppf(1 - alpha / 2, df)

    def power_at(nc: float) -> float:
        wrong_way = float(scipy_stats.nct.cdf(-q, df, nc))  # nan far out, where it is ~0
        return float(scipy_stats.nct.sf(q, df, nc)) + (0.0 if math.isnan(wrong_way) else wrong_way)

    lo, hi = 0.0, 1.0
    while power_at(hi) < power:
        lo, hi = hi, 2 * hi
    for _ in range(50):
        nc = (lo + hi) / 2
        lo, hi = (lo, nc) if power_at(nc) >= power else (nc, hi)
    return hi * se


def normal_smallest_change(se: float, power: float = POWER, alpha: float = 0.05) -> float:
    """(z_(1-alpha/2) + z_power) x se: the same with the variance known (large n)."""
    z = statistics.NormalDist()
    return (z.inv_cdf(1 - alpha / 2) + z.inv_cdf(power)) * se


def sd_spread(df: float) -> tuple[float, float]:
    """How far a sample SD of `df` degrees of freedom strays from the true SD, 95% of the time
    (as factors of it: chi-square)."""
    from scipy import stats as scipy_stats

    return (
        math.sqrt(scipy_stats.chi2.ppf(0.025, df) / df),
        math.sqrt(scipy_stats.chi2.ppf(0.975, df) / df),
    )


@dataclass(frozen=True)
class Detectable:
    """Each design's estimator of the log change B/A, its noise from measured trials, and the
    smallest change (relative, 0.05: 5%) it detects with POWER at those trials."""

    rounds: int  # trials a side, the smaller of the two designs'
    duet_sd: float  # SD of the per-round paired log ratios
    rounds_sd: tuple[float, float]  # SD of A's and of B's log throughputs
    duet_se: float
    rounds_se: float
    duet_df: float
    rounds_df: float  # Welch-Satterthwaite
    common_share: float  # corr of A's and B's per-round log means in the duet
    duet: float
    rounds_change: float
    duet_normal: float
    rounds_normal: float
    trials: tuple[Sequence[float], ...] = ()  # duet A, duet B, rounds A, rounds B (logs)


def detectable(
    duet_a: Sequence[float],
    duet_b: Sequence[float],
    rounds_a: Sequence[float],
    rounds_b: Sequence[float],
) -> Detectable:
    """From the trials (log throughputs): the duet's paired t over rounds and RandomizedRounds'
    Welch over its trials a side, as duet.compare and compare judge them."""
    if min(len(duet_a), len(rounds_a), len(rounds_b)) < 2 or len(duet_a) != len(duet_b):
        raise ValueError(
            f"too few trials to measure noise: duet {len(duet_a)}/{len(duet_b)} rounds, "
            f"RandomizedRounds {len(rounds_a)}/{len(rounds_b)} (2 a side at least)"
        )
    n, na, nb = len(duet_a), len(rounds_a), len(rounds_b)
    d_sd = statistics.stdev([b - a for a, b in zip(duet_a, duet_b, strict=True)])
    sa, sb = statistics.stdev(rounds_a), statistics.stdev(rounds_b)
    va, vb = sa * sa / na, sb * sb / nb
    r_se, d_se = math.sqrt(va + vb), d_sd / math.sqrt(n)
    r_df = (va + vb) ** 2 / (va * va / (na - 1) + vb * vb / (nb - 1)) if va + vb else na + nb - 2
    try:
        share = statistics.correlation(duet_a, duet_b)
    except statistics.StatisticsError:  # a constant side: no correlation to speak of
        share = math.nan
    return Detectable(
        rounds=min(n, na, nb),
        duet_sd=d_sd,
        rounds_sd=(sa, sb),
        duet_se=d_se,
        rounds_se=r_se,
        duet_df=n - 1,
        rounds_df=r_df,
        common_share=share,
        duet=math.expm1(smallest_change(d_se, n - 1)),
        rounds_change=math.expm1(smallest_change(r_se, r_df)),
        duet_normal=math.expm1(normal_smallest_change(d_se)),
        rounds_normal=math.expm1(normal_smallest_change(r_se)),
        trials=(tuple(duet_a), tuple(duet_b), tuple(rounds_a), tuple(rounds_b)),
    )


def measured_lines(found: Detectable, step_seconds: float, load: str) -> tuple[str, list[str]]:
    """(the short form, the lines printed) of the figure measured on the plane."""
    n = found.rounds
    where = f"{n} trials each, measured on this plane"
    sa, sb = found.rounds_sd
    ratio = found.rounds_se / found.duet_se if found.duet_se else math.inf
    low, high = sd_spread(n - 1)
    return (
        f"Duet {_pct(found.duet)} vs RandomizedRounds {_pct(found.rounds_change)} at 80% power "
        f"({where})",
        [
            f"smallest change detected at 80% power: Duet {_pct(found.duet)} vs RandomizedRounds "
            f"{_pct(found.rounds_change)} ({where})",
            f"  A/A on the local plane: {n} rounds of {step_seconds:g} s YCSB C steps, a Duet "
            f"(paired t over rounds, df {found.duet_df:g}) and RandomizedRounds (Welch, df "
            f"{found.rounds_df:.1f}) back to back; load average {load}",
            f"  noise: SD of the duet's per-round log ratio {100 * found.duet_sd:.2f}%, of "
            f"RandomizedRounds' log throughput A {100 * sa:.2f}% B {100 * sb:.2f}%; standard "
            f"errors {100 * found.duet_se:.2f}% vs {100 * found.rounds_se:.2f}% "
            f"({ratio:.1f}x); common share (corr of A's and B's per-round log means in the "
            f"duet) {found.common_share:.2f}",
            f"  with the variances known (z, large n): Duet {_pct(found.duet_normal)} vs "
            f"RandomizedRounds {_pct(found.rounds_normal)}; an SD from {n} trials is itself "
            f"rough: 95% of the time within x{low:.2f}-x{high:.2f} of the true one",
            *_trial_lines(found.trials),
        ],
    )


def _trial_lines(trials: tuple[Sequence[float], ...]) -> list[str]:
    """The trials themselves, in ops/s (geometric means of the per-second series for the duet)."""
    if len(trials) != 4:
        return []
    da, db, ra, rb = ([f"{math.exp(x):.0f}" for x in side] for side in trials)
    return [
        "  duet rounds, A/B ops/s: " + ", ".join(f"{a}/{b}" for a, b in zip(da, db, strict=True)),
        f"  RandomizedRounds trials, ops/s: A {', '.join(ra)}; B {', '.join(rb)}",
    ]
