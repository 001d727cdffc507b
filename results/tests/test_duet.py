"""Unit tier: the paired comparison of a duet (mongobench_results.duet) on simulated runs whose
truth is known: per-second series of A and B under common-mode noise (both sides move together,
as two runs side by side on one node do), and the pairs' validity."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from mongobench_results import duet

pytestmark = pytest.mark.unit

START = "2026-12-07T10:00:00.000000Z"


def shared_noise(rng: random.Random, n: int, sd: float = 0.25, rho: float = 0.8) -> list[float]:
    """An AR(1) log-noise both sides see: slow swings of the machine, +-25%."""
    out, x = [], 0.0
    for _ in range(n):
        x = rho * x + math.sqrt(1 - rho * rho) * rng.gauss(0, sd)
        out.append(x)
    return out


def run(
    name: str,
    side: int,
    throughput: list[float],
    *,
    pair: str = "x-r1",
    start: str = START,
    cpu: float | None = 1.0,
    latency: list[float] | None = None,
    phase: str = "Succeeded",
) -> dict[str, Any]:
    series: dict[str, Any] = {"intervalSeconds": 1.0, "startSeconds": 1, "throughput": throughput}
    if latency is not None:
        series["latencyAvgUs"] = latency
    step: dict[str, Any] = {
        "index": 1,
        "kind": "run",
        "workload": "a",
        "phase": phase,
        "result": {"series": series, "startAt": start},
    }
    if cpu is not None:
        step["roles"] = {"mongod": {"sum": {"cpuCores": cpu}}, "clients": {"sum": {}}}
    return {
        "metadata": {"name": name},
        "spec": {"duet": {"name": pair, "side": side, "peerParallelism": 1}},
        "status": {"steps": [step]},
    }


def duet_runs(seed: int, effect: float, rounds: int = 3, n: int = 60) -> list[dict[str, Any]]:
    """`rounds` rounds of A and B side by side: B = A x (1 + effect), both under one noise,
    each with 2% of its own."""
    rng = random.Random(seed)
    out = []
    for r in range(1, rounds + 1):
        common = shared_noise(rng, n)
        a = [1000 * math.exp(c + rng.gauss(0, 0.02)) for c in common]
        b = [1000 * (1 + effect) * math.exp(c + rng.gauss(0, 0.02)) for c in common]
        lat_a = [2000 / math.exp(c) for c in common]
        lat_b = [v / (1 + effect) for v in lat_a]
        out += [
            run(f"x-c0-r{r}", 0, a, pair=f"x-r{r}", latency=lat_a),
            run(f"x-c1-r{r}", 1, b, pair=f"x-r{r}", latency=lat_b),
        ]
    return out


def row(result: duet.Result, metric: str) -> duet.Row:
    return next(r for r in result.rows if r.metric == metric)


def test_an_aa_duet_says_no_difference_under_noise_both_sides_share() -> None:
    verdicts = [row(duet.compare(duet_runs(s, 0.0)), "throughput").verdict for s in range(40)]
    # At 95% confidence about 2 in 40 may say otherwise; far more would be a broken interval.
    assert verdicts.count(duet.NO_DIFFERENCE) >= 35


def test_a_5_percent_change_under_25_percent_shared_noise_is_found_with_its_sign() -> None:
    covered = 0
    for seed in range(20):
        result = duet.compare(duet_runs(seed, 0.05))
        tp, lat = row(result, "throughput"), row(result, "latency")
        assert tp.verdict == duet.FASTER and tp.low is not None and tp.high is not None
        covered += tp.low < 0.05 < tp.high
        assert lat.verdict == duet.FASTER  # lower latency is faster
        assert tp.rounds == 3 and tp.intervals == 3 * (60 - 2)  # edges left out
    assert covered >= 17  # a 95% interval holds the truth about 19 times in 20
    slower = duet.compare(duet_runs(1, -0.05))
    assert row(slower, "throughput").verdict == duet.SLOWER
    assert duet.validity_condition(slower)[:2] == ("True", "AllPaired")


def test_one_round_gets_a_block_bootstrap_interval_over_its_seconds() -> None:
    found = duet.compare(duet_runs(3, 0.05, rounds=1, n=120))
    assert row(found, "throughput").verdict == duet.FASTER
    same = [
        row(duet.compare(duet_runs(s, 0.0, rounds=1, n=120)), "throughput").verdict
        for s in range(20)
    ]
    assert same.count(duet.NO_DIFFERENCE) >= 17


def test_pairs_that_did_not_run_together_or_whole_or_fairly_are_left_out_and_said() -> None:
    flat = [1000.0] * 60
    runs = [
        run("x-c0-r1", 0, flat, pair="x-r1"),
        run("x-c1-r1", 1, flat, pair="x-r1", start="2026-12-07T10:00:03.000000Z"),
        run("x-c0-r2", 0, flat, pair="x-r2"),
        run("x-c1-r2", 1, flat[:40], pair="x-r2"),
        run("x-c0-r3", 0, flat, pair="x-r3", cpu=3.0),
        run("x-c1-r3", 1, flat, pair="x-r3", cpu=0.5),
        run("x-c0-r4", 0, flat, pair="x-r4", cpu=1.0),
        run("x-c1-r4", 1, [1050.0] * 59, pair="x-r4", cpu=0.6),
    ]
    result = duet.compare(runs)
    reasons = {p.duet: [r for r, _ in p.problems] for p in result.pairs}
    assert reasons == {
        "x-r1": [duet.NOT_TOGETHER],
        "x-r2": [duet.SHORT_SIDE],
        "x-r3": [duet.STARVED],
        "x-r4": [],  # one interval short is within the tolerance
    }
    shares = {p.duet: p.cpu_share for p in result.pairs}
    assert shares["x-r3"] == pytest.approx(0.5 / 3.5)
    assert shares["x-r4"] == pytest.approx(0.375)
    status, reason, message = duet.validity_condition(result)
    assert (status, reason) == ("False", duet.NOT_TOGETHER)
    assert message.startswith("3 of 4 pairs invalid; x-r1 a: the sides started 3.0 s apart")
    assert result.to_dict()["validPairs"] == 1
    assert result.notes == ("3 of 4 pairs invalid, left out",)


def test_runs_without_a_partner_or_series_make_no_comparison() -> None:
    lonely = duet.compare([run("x-c0-r1", 0, [1.0] * 60)])
    assert lonely.pairs == () and lonely.rows == ()
    assert duet.validity_condition(lonely)[0] == "Unknown"
    failed = duet.compare([run("x-c0-r1", 0, [1.0] * 60), run("x-c1-r1", 1, [], phase="Failed")])
    assert failed.pairs[0].problems[0][0] == duet.NOT_PAIRED
    assert row(failed, "throughput").verdict == "too few pairs"


def test_each_sides_partial_first_and_last_second_are_left_out() -> None:
    """A client's start and end fall inside a second: 176 against 14 ops/s there says when the
    second began, not which side is faster. Only the full seconds are paired."""
    a = {"throughput": [176.0, 100.0, 100.0, 100.0, 0.0]}
    b = {"throughput": [14.0, 105.0, 105.0, 105.0, 272.0]}
    assert duet.paired_intervals(a, b, "throughput") == [(100.0, 105.0)] * 3
    assert duet.log_ratios(a, b, "throughput") == pytest.approx([math.log(1.05)] * 3)
