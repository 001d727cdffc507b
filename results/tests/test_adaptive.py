"""Unit tier: the adaptive-repetitions stopping rule."""

from __future__ import annotations

import pytest

from mongobench_results import adaptive

pytestmark = pytest.mark.unit

POLICY = adaptive.Policy(min=3, max=10, metric="throughput", relative_half_width=0.05)


def test_goes_on_below_min_even_when_narrow() -> None:
    d = adaptive.decide(POLICY, [100.0, 100.1])
    assert not d.done


def test_stops_when_the_interval_is_narrow_enough() -> None:
    d = adaptive.decide(POLICY, [100.0, 101.0, 99.0])
    assert d.done and d.met
    assert d.relative_half_width is not None and d.relative_half_width < 0.05


def test_goes_on_while_wide_then_stops_at_max_unmet() -> None:
    noisy = [100.0, 140.0, 70.0, 120.0]
    assert not adaptive.decide(POLICY, noisy).done
    d = adaptive.decide(POLICY, (noisy * 3)[:10])
    assert d.done and d.met is False and d.n == 10


def test_fixed_repetitions_stop_at_their_count() -> None:
    fixed = adaptive.Policy.fixed(3)
    assert not adaptive.decide(fixed, [1.0, 2.0]).done
    assert adaptive.decide(fixed, [1.0, 2.0, 3.0]).done


def test_an_experiment_is_done_when_every_cell_is() -> None:
    assert not adaptive.all_done(POLICY, [[100.0, 101.0, 99.0], [100.0, 140.0, 70.0]])
    assert adaptive.all_done(POLICY, [[100.0, 101.0, 99.0], [50.0, 50.5, 49.5]])
