"""Unit tier: the method benchmark's own parts (benchmarks/method.py): its noise has the mean and
CV asked for, and its last line joins the figures' short forms in FIGURES' order, so a figure
added by another part of the method lands in it."""

from __future__ import annotations

import random
import re
import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(1, str(Path(__file__).resolve().parents[2] / "e2e" / "local"))
import method
import method_duet
import method_validity

pytestmark = pytest.mark.unit


def test_trials_have_the_mean_and_cv_asked_for_and_a_right_skew() -> None:
    values = method.trials(random.Random(1), 1000.0, 0.2, 20_000)
    mean, sd = statistics.fmean(values), statistics.stdev(values)
    assert mean == pytest.approx(1000.0, rel=0.01)
    assert sd / mean == pytest.approx(0.2, abs=0.01)
    assert statistics.median(values) < mean  # log-normal: a longer right tail


def test_the_last_line_joins_the_figures_in_order(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(method, "TABLES", 10)
    monkeypatch.setattr(method_duet, "EXPERIMENTS", 20)
    monkeypatch.setenv("BENCH_NOISY_STEPS", "0")  # the hog's figure needs minutes of this machine
    monkeypatch.setenv("BENCH_DUET_PLANE", "0")  # so does the duet's, on the plane
    real = method_validity.warmup_found_rate
    monkeypatch.setattr(method_validity, "warmup_found_rate", lambda: real(trials=30))
    method.main()
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(
        r"bench-method: A/A no-difference \d+\.\d%, 5% change detected \d+\.\d%, "
        r"adaptive same verdict \d+\.\d% with -?\d+% fewer trials, "
        r"Duet [\d.]+% vs RandomizedRounds [\d.]+% at 80% power \(10 trials each, simulated\), "
        r"warm-up found \d+\.\d%, noisy neighbour not measured",
        lines[-1],
    ), lines[-1]
    assert lines[0].startswith("A/A: 60 comparisons in 10 tables")


def test_a_figure_appended_to_the_list_ends_the_last_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(method, "TABLES", 5)
    extra = method.Figure("something found 100%", ["something: 5 steps with a known truth"])
    monkeypatch.setattr(method, "FIGURES", [*method.FIGURES[:3], lambda: extra])
    method.main()
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].endswith(" fewer trials, something found 100%")
    assert "something: 5 steps with a known truth" in lines


def test_the_t_tests_power_is_the_textbook_figure() -> None:
    # Two groups of 10, a difference of one SD: power 0.56 at alpha 0.05 (Cohen's tables).
    assert method._power(10, 0.05, 0.05) == pytest.approx(0.56, abs=0.01)


def test_a_duet_finds_a_change_rounds_cannot_at_ten_trials_and_aa_duets_stay_quiet() -> None:
    # The simulated model shares the machine's noise between a duet's sides (80% of the trial
    # variance): at 3% and 10 trials a duet finds it nearly always, sequential rounds seldom;
    # with no change a duet seldom says "faster".
    assert method_duet.power(method_duet.duet_detects, 0.03, 1) >= 0.7
    assert method_duet.power(method_duet.rounds_detects, 0.03, 1) <= 0.4
    assert method_duet.power(method_duet.duet_detects, 0.0, 2) <= 0.08
