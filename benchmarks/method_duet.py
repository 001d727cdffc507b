"""make bench-method's Duet figure: the smallest change detected with 80% power by a Duet
against RandomizedRounds at the same number of trials, side by side in one run.

Simulated, not measured on the plane: both designs draw from one model of a shared machine,
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
import statistics
from collections.abc import Callable
from typing import Any

from mongobench_results import compare, duet

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
    return "none of the tried" if math.isinf(effect) else f"{100 * effect:g}%"


def figure(seed: int) -> tuple[str, list[str]]:
    """(the short form, the lines it rests on)."""
    d, dp = smallest(duet_detects, seed)
    r, rp = smallest(rounds_detects, seed)
    aa = power(duet_detects, 0.0, seed)  # an A/A duet: "faster" is a false positive
    short = f"Duet {_pct(d)} vs RandomizedRounds {_pct(r)} at 80% power ({TRIALS} trials each)"
    lines = [
        f"smallest change detected at 80% power: Duet {_pct(d)} vs RandomizedRounds {_pct(r)} "
        f"({TRIALS} trials each)",
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
