"""Unit tier: the Duet figure's measured part (benchmarks/method_duet.py) from given trials: the
trials each design's verdict weighs are read from run objects as the API holds them, the
smallest change detected with 80% power follows from their noise, and bench-method's line says
whether it was measured on the plane or simulated."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(1, str(Path(__file__).resolve().parents[2] / "e2e" / "local"))
import method
import method_duet

from mongobench_results import duet

pytestmark = pytest.mark.unit


def _duet_runs(rounds: list[tuple[list[float], list[float]]]) -> list[dict[str, Any]]:
    """A duet's runs (both sides of each round), shaped as the operator writes them."""
    out = []
    for r, (a, b) in enumerate(rounds, start=1):
        out += [method_duet._run(f"d-r{r}", 0, a), method_duet._run(f"d-r{r}", 1, b)]
    return out


def _rounds_run(name: str, throughput: float, phase: str = "Succeeded") -> dict[str, Any]:
    steps = [
        {"index": 0, "kind": "load", "phase": "Succeeded", "result": {"throughput": 1.0}},
        {"index": 1, "kind": "run", "workload": "c", "phase": phase,
         "result": {"throughput": throughput}},
    ]  # fmt: skip
    return {"metadata": {"name": name}, "spec": {}, "status": {"steps": steps}}


def test_a_duets_trials_are_each_sides_log_level_and_their_gap_is_the_paired_estimate() -> None:
    # Each side's first and last second are partial and left out (duet.paired_intervals).
    rounds = [
        ([3.0, 100.0, 110.0, 90.0, 7.0], [300.0, 105.0, 120.0, 92.0, 1.0]),
        ([9.0, 50.0, 60.0, 2.0], [1.0, 51.0, 57.0, 8.0]),
    ]
    runs = _duet_runs(rounds)
    a, b = method_duet.duet_trials(runs)
    assert a[0] == pytest.approx((math.log(100) + math.log(110) + math.log(90)) / 3)
    row = duet.compare(runs).rows[0]  # what the experiment's status says: B against A
    assert math.expm1(sum(y - x for x, y in zip(a, b, strict=True)) / 2) == pytest.approx(
        row.change
    )


def test_a_pair_the_duet_leaves_out_is_no_trial() -> None:
    runs = _duet_runs([([100.0] * 5, [101.0] * 5), ([100.0] * 5, [99.0] * 5)])
    runs[3]["status"]["steps"][0]["phase"] = "Failed"  # round 2's B side
    a, b = method_duet.duet_trials(runs)
    assert (len(a), len(b)) == (1, 1)


def test_randomized_rounds_trials_are_the_measured_steps_of_each_cell() -> None:
    runs = [
        _rounds_run("x-c0-r1", 100.0),
        _rounds_run("x-c1-r1", 200.0),
        _rounds_run("x-c0-r2", 300.0),
        _rounds_run("x-c1-r2", 400.0, phase="Failed"),
    ]
    a, b = method_duet.rounds_trials(runs)
    assert a == pytest.approx([math.log(100), math.log(300)])
    assert b == pytest.approx([math.log(200)])  # the load step and the failed step are not trials


def test_the_smallest_change_at_80_percent_power_is_the_t_tests_and_nears_z_with_many_df() -> None:
    # Two groups of n at CV 5%: the change found gives the two-sample t test (method._power,
    # Student's noncentral t) its 80% power.
    n, cv = 10, 0.05
    change = method_duet.smallest_change(cv * math.sqrt(2 / n), 2 * n - 2)
    assert method._power(n, change, cv) == pytest.approx(0.8, abs=0.001)
    assert method_duet.smallest_change(0.01, 10**6) == pytest.approx(
        method_duet.normal_smallest_change(0.01), rel=1e-3
    )
    assert method_duet.normal_smallest_change(0.01) == pytest.approx(0.028016, rel=1e-4)
    # Few degrees of freedom cost power: a paired t over 6 rounds needs more than Welch's ~10 df.
    assert method_duet.smallest_change(0.01, 5) > method_duet.smallest_change(0.01, 10) > 0.028


def test_shared_noise_cancels_in_a_duet_and_not_across_sequential_trials() -> None:
    machine = [0.0, 0.10, -0.08, 0.05, -0.02, 0.12]  # the machine's state, round by round
    own = [0.01, -0.01, 0.01, -0.01, 0.01, -0.01]
    duet_a = machine
    duet_b = [m + o for m, o in zip(machine, own, strict=True)]
    rounds_a, rounds_b = machine, [m + o for m, o in zip(reversed(machine), own, strict=True)]
    found = method_duet.detectable(duet_a, duet_b, rounds_a, rounds_b)
    assert found.rounds == 6 and found.duet_df == 5
    assert found.duet_sd == pytest.approx(0.010954, rel=1e-3)  # the own noise alone
    assert found.duet_se == pytest.approx(found.duet_sd / math.sqrt(6))
    assert found.common_share > 0.95
    assert found.duet < 0.05 < found.rounds_change  # a 5% change: the duet finds it
    short, lines = method_duet.measured_lines(found, 10, "3.0/2.0/1.0")
    assert re.fullmatch(
        r"Duet [\d.]+% vs RandomizedRounds [\d.]+% at 80% power \(6 trials each, measured on "
        r"this plane\)",
        short,
    ), short
    assert lines[0].startswith("smallest change detected at 80% power: Duet ")
    assert "load average 3.0/2.0/1.0" in lines[1] and "10 s" in lines[1]


def test_too_few_trials_say_how_many_there_were() -> None:
    with pytest.raises(ValueError, match=r"duet 1/1 rounds, RandomizedRounds 3/3"):
        method_duet.detectable([0.0], [0.0], [0.0, 0.1, 0.2], [0.0, 0.1, 0.2])


def test_bench_method_puts_the_planes_figure_first_and_keeps_the_simulated_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import method_duet_plane

    monkeypatch.setattr(method_duet, "EXPERIMENTS", 10)
    monkeypatch.setattr(method_duet, "EFFECTS", (0.05,))
    monkeypatch.setenv("BENCH_DUET_PLANE", "1")
    same = [([100.0, 101.0, 99.0], [100.0, 100.0, 100.0 + r]) for r in range(4)]
    runs = [_rounds_run(f"rounds-c{c}-r{r}", 100.0 + 3 * r + c) for r in range(4) for c in (0, 1)]
    monkeypatch.setattr(
        method_duet_plane, "measure", lambda: (_duet_runs(same), runs, {"duet": "Succeeded"})
    )
    figure = method.duet_against_rounds()
    assert figure.short.endswith("(4 trials each, measured on this plane)"), figure.short
    simulated = [x for x in figure.lines if x.startswith("smallest change")]
    assert len(simulated) == 2 and simulated[1].endswith("(10 trials each, simulated)")
    assert "  RandomizedRounds trials, ops/s: A 100, 103, 106, 109; B 101, 104, 107, 110" in (
        figure.lines
    )
    assert any(x.endswith("experiments duet Succeeded") for x in figure.lines), figure.lines
