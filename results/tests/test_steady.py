"""Unit tier: change points in a step's throughput series (warm-up, level shift, steady)."""

from __future__ import annotations

import random

import pytest

from mongobench_results import steady

pytestmark = pytest.mark.unit


def series(
    n: int, cv: float, *, warmup: int = 0, shift_at: int | None = None, seed: int = 1
) -> list[float]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        level = 1000.0
        if i < warmup:
            level *= 0.4 + 0.6 * i / warmup  # a ramp that meets the level at `warmup`
        if shift_at is not None and i >= shift_at:
            level *= 0.7
        out.append(rng.gauss(level, cv * level))
    return out


def test_a_flat_noisy_series_is_steady() -> None:
    verdict = steady.judge_series(series(120, 0.05))
    assert verdict.steady and verdict.judged
    assert verdict.warmup_seconds is None and not verdict.shifts_seconds


@pytest.mark.parametrize("length", [4, 9, 15])
def test_a_warm_up_is_found_within_two_seconds_of_its_length(length: int) -> None:
    verdict = steady.judge_series(series(90, 0.05, warmup=length, seed=length))
    assert not verdict.steady
    assert verdict.warmup_seconds is not None
    assert abs(verdict.warmup_seconds - length) <= 2
    assert not verdict.shifts_seconds
    assert "warm-up" in verdict.message()


def test_a_late_level_shift_is_not_a_warm_up() -> None:
    verdict = steady.judge_series(series(100, 0.05, shift_at=70))
    assert not verdict.steady
    assert verdict.warmup_seconds is None
    assert verdict.shifts_seconds and abs(verdict.shifts_seconds[0] - 70) <= 2
    assert "level shift" in verdict.message()


def test_the_interval_scales_the_seconds() -> None:
    verdict = steady.judge_series(series(60, 0.03, warmup=10), interval_seconds=2.0)
    assert verdict.warmup_seconds is not None and abs(verdict.warmup_seconds - 20) <= 4


def test_a_short_series_is_not_judged() -> None:
    verdict = steady.judge_series([100.0] * 5)
    assert verdict.steady and not verdict.judged
    assert verdict.to_dict()["judged"] is False


def test_a_small_real_shift_does_not_count() -> None:
    rng = random.Random(4)
    values = [rng.gauss(1000, 2) for _ in range(40)] + [rng.gauss(1020, 2) for _ in range(40)]
    assert steady.change_points(values)  # PELT sees it: 10 noise SDs
    assert steady.judge_series(values).steady  # but 2% is below MIN_SHIFT


def test_the_partial_first_and_last_intervals_are_neither_warm_up_nor_shift() -> None:
    # A duration-bounded trial as the demo measured it: 25 full seconds between a first interval
    # holding the client's start and a last one cut off by the deadline (a third of the level).
    for seed in range(1, 21):
        values = series(27, 0.05, seed=seed)
        cut = [300.0, *values[1:-1], 350.0]
        whole, partial = steady.judge_series(values), steady.judge_series(cut)
        assert (partial.steady, partial.warmup_seconds, partial.shifts_seconds) == (
            whole.steady,
            whole.warmup_seconds,
            whole.shifts_seconds,
        ), seed
        assert partial.points == 27
    # A real warm-up is still found, and its seconds still count from the series' start.
    ramp = series(27, 0.03, warmup=8, seed=3)
    ramp[-1] = 350.0
    found = steady.judge_series(ramp)
    assert found.warmup_seconds is not None and abs(found.warmup_seconds - 8) <= 2


def test_an_early_drop_is_a_level_shift_not_a_warm_up() -> None:
    values = [1000.0 if i < 8 else 800.0 for i in range(30)]
    values = [v * (1 + 0.02 * ((i * 7) % 5 - 2) / 2) for i, v in enumerate(values)]
    verdict = steady.judge_series(values)
    assert not verdict.steady
    assert verdict.warmup_seconds is None and verdict.shifts_seconds
