"""Unit tier: the knee search against a simulated system with a known knee and noisy
measurements: found within the resolution, with fewer probes than a grid of that resolution."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from mongobench_results import knee

pytestmark = pytest.mark.unit

TARGET = knee.Target("p99", limit_ms=10.0, start=100, maximum=20000, resolution=0.05)


def queueing_system(
    capacity: float, base_ms: float, noise: float, rng: random.Random
) -> Callable[[int], knee.Probe]:
    """An M/M/1-like server: p99 = base / (1 - load / capacity), lognormal noise; the knee is
    where p99 reaches the limit: capacity * (1 - base / limit)."""

    def measure(offered: int) -> knee.Probe:
        carried = min(offered, 0.995 * capacity)
        p99_ms = base_ms / (1 - carried / capacity) * rng.lognormvariate(0, noise)
        achieved = min(offered, capacity) * rng.lognormvariate(0, noise / 2)
        return knee.Probe(offered, achieved, p99_ms * 1000)

    return measure


def run_search(target: knee.Target, measure: Callable[[int], knee.Probe]) -> knee.Search:
    probes: list[knee.Probe] = []
    while not (found := knee.search(target, probes)).done:
        assert found.next_load is not None
        probes.append(measure(found.next_load))
    return found


@pytest.mark.parametrize("seed", range(40))
def test_finds_a_noisy_knee_within_the_resolution_with_fewer_probes_than_the_grid(
    seed: int,
) -> None:
    rng = random.Random(seed)
    capacity = rng.uniform(1500, 15000)
    true_knee = capacity * (1 - 1.0 / TARGET.limit_ms)
    found = run_search(TARGET, queueing_system(capacity, 1.0, 0.05, rng))
    assert found.knee is not None
    assert abs(found.knee - true_knee) / true_knee <= TARGET.resolution
    assert found.probes < knee.grid_probes(TARGET) / 3


def test_a_probe_at_the_limit_is_repeated_and_judged_by_the_majority() -> None:
    at_limit = knee.Probe(100, 100, 10_200)  # 2% over: inside the 10% boundary
    under = knee.Probe(100, 100, 9_800)
    first = knee.search(TARGET, [at_limit])
    assert first.next_load == 100 and first.repeat and not first.done
    second = knee.search(TARGET, [at_limit, under])
    assert second.next_load == 100 and second.repeat
    third = knee.search(TARGET, [at_limit, under, under])
    assert third.passing == 100 and third.next_load == 200  # 2 of 3 passed: bracket on


def test_a_load_the_clients_cannot_carry_fails_even_with_low_latency() -> None:
    carried_half = knee.Probe(100, 50, 1_000)  # closed-loop clients saturated: latency looks fine
    found = knee.search(TARGET, [carried_half])
    assert found.done and found.knee is None and found.failing == 100
    assert "fails at the start" in found.reason


def test_a_system_that_passes_at_the_maximum_reports_the_maximum() -> None:
    target = knee.Target("p99", 10.0, start=100, maximum=500, resolution=0.05)
    found = run_search(target, lambda load: knee.Probe(load, load, 1_000))
    assert found.done and found.knee == 500 and found.failing is None
    assert found.probes == 4  # 100, 200, 400, 500
    assert knee.grid_probes(target) == 33


def test_status_gives_the_knee_its_interval_the_limit_and_probes_against_the_grid() -> None:
    found = knee.Search(None, 1000, 1050, 9, True, "between 1000 (passes) and 1050 (fails)")
    trials = [knee.Probe(1000, a, lat) for a, lat in ((990, 8000), (1000, 8500), (1010, 9000))]
    out = knee.status(TARGET, found, trials, "a")
    assert out["offeredOpsPerSecond"] == 1000 and out["failingOpsPerSecond"] == 1050
    assert out["probes"] == 9 and out["gridProbes"] == knee.grid_probes(TARGET)
    assert out["throughput"]["n"] == 3 and out["throughput"]["mean"] == pytest.approx(1000)
    assert out["throughput"]["ciLow"] < 1000 < out["throughput"]["ciHigh"]
    assert out["latencyMs"]["mean"] == pytest.approx(8.5) and out["met"] is True
    assert out["limitMs"] == 10.0 and out["percentile"] == "p99"


def test_the_curve_reads_probes_and_knee_trials_from_a_run() -> None:
    def step(kind: str, offered: int, tp: float, p99: float) -> dict[str, object]:
        return {
            "kind": kind,
            "workload": "c",
            "phase": "Succeeded",
            "offeredOpsPerSecond": offered,
            "result": {"throughput": tp, "operations": {"READ": {"p99": p99}}},
        }

    run = {
        "spec": {"knee": {"latency": {"percentile": "p99", "limitMs": 5}}},
        "status": {
            "steps": [
                {"kind": "prepare", "phase": "Succeeded"},
                step("probe", 100, 99.0, 1200.0),
                step("probe", 200, 150.0, 9000.0),
                step("run", 100, 101.0, 1300.0),
            ]
        },
    }
    points = knee.curve(run)
    assert [(p.offered, p.achieved, p.latency_ms, p.at_knee) for p in points] == [
        (100, 99.0, 1.2, False),
        (200, 150.0, 9.0, False),
        (100, 101.0, 1.3, True),
    ]
