"""Unit tier: the client's throughput series from its status lines, judged for steadiness, in a
result document that the schema accepts and the merge adds up."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hdrh.histogram import HdrHistogram
from runner_support import validate

from mongobench_results.document import OpResult, Window, build_document, utc_now
from mongobench_results.merge import merge_documents
from mongobench_runner.metrics import LiveMetrics
from mongobench_runner.series import series_fields
from mongobench_runner.status import IntervalStats, format_status_line, parse_status_line

pytestmark = pytest.mark.unit
T0 = 1_700_000_000_000_000


def status_lines(rates: list[float]) -> list[str]:
    total = 0
    lines = []
    for second, rate in enumerate(rates, start=1):
        total += round(rate)
        lines.append(format_status_line(utc_now(), second, total, rate, {}))
    return lines


def recorded(rates: list[float]) -> list[tuple[int, float]]:
    metrics = LiveMetrics(driver="ycsb", phase="run", workload="a", client_index=0)
    for line in status_lines(rates):
        parsed = parse_status_line(line)
        assert parsed is not None
        metrics.observe(parsed)
    return metrics.throughput_points


def ramp(n: int, warmup: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(1000 * (0.4 + 0.6 * min(i, warmup) / warmup), 30) for i in range(n)]


def document(index: int, points: list[tuple[int, float]]) -> dict[str, Any]:
    start = utc_now()
    return build_document(
        driver="ycsb",
        driver_version="test",
        phase="run",
        workload="a",
        properties={},
        labels={},
        client_index=index,
        clients=2,
        threads=1,
        start=start,
        end=start,
        window=Window(T0, T0 + 60_000_000),
        operations={"READ": _ops()},
        transactions=60_000,
        cpu_user_s=1.0,
        cpu_system_s=0.1,
        error=None,
        expected_ops=None,
        throttled=False,
        **series_fields(points),
    )


def _ops() -> OpResult:
    h = HdrHistogram(1, 60_000_000, 3)
    for _ in range(100):
        h.record_value(900)
    return OpResult(h, {"OK": 100})


def test_the_status_lines_become_the_series_and_a_warm_up_is_found() -> None:
    points = recorded(ramp(60, 8, seed=1))
    fields = series_fields(points)
    assert fields["series"]["intervalSeconds"] == 1.0
    assert len(fields["series"]["throughput"]) == 60
    verdict = fields["steadiness"]
    assert verdict["steady"] is False
    assert abs(verdict["warmupSeconds"] - 8) <= 2


def test_no_status_line_no_series() -> None:
    assert series_fields([]) == {}


def test_documents_with_series_pass_the_schema_and_merge_adds_them_up() -> None:
    a = document(0, recorded([1000.0] * 30))
    b = document(1, recorded(ramp(30, 6, seed=2)))
    validate(a)
    merged = merge_documents([a, b])
    validate(merged)
    assert merged["series"]["throughput"][-1] == pytest.approx(
        a["series"]["throughput"][-1] + b["series"]["throughput"][-1]
    )
    assert [c.get("steadiness", {}).get("steady") for c in merged["clients"]] == [True, False]


def test_the_client_reads_its_cgroup_throttling_v1_and_v2(tmp_path: Any) -> None:
    from mongobench_runner import cgroup

    v2 = tmp_path / "v2"
    (v2 / "kubepods" / "pod1").mkdir(parents=True)
    (v2 / "kubepods" / "pod1" / "cpu.stat").write_text(
        "usage_usec 5\nnr_periods 200\nnr_throttled 150\nthrottled_usec 9\n"
    )
    proc = tmp_path / "cgroup"
    proc.write_text("0::/kubepods/pod1\n")
    assert cgroup.cfs_periods(v2, proc) == (200, 150)
    v1 = tmp_path / "v1"
    (v1 / "cpu" / "mb").mkdir(parents=True)
    (v1 / "cpu" / "mb" / "cpu.stat").write_text("nr_periods 10\nnr_throttled 1\n")
    proc.write_text("4:memory:/x\n1:cpu:/mb\n0::/\n")
    assert cgroup.cfs_periods(v1, proc) == (10, 1)
    assert cgroup.during((10, 1), (110, 81)) == (100, 80)
    assert cgroup.during((10, 1), (10, 1)) is None  # no quota: no period passes


def test_the_series_keeps_each_intervals_mean_latency_and_merge_weights_it_by_throughput() -> None:
    # The per-interval latency a duet pairs: each status line's operations' mean (count
    # weighted), aligned with the throughput; merged over clients by their throughput then.
    metrics = LiveMetrics(driver="ycsb", phase="run", workload="a", client_index=0)
    stats = {
        "READ": IntervalStats(30, 100, 900, 200.0, 0, 0, 0, 0),
        "UPDATE": IntervalStats(10, 100, 900, 600.0, 0, 0, 0, 0),
    }
    for second, ops in ((1, stats), (2, {}), (3, stats)):
        line = parse_status_line(format_status_line(utc_now(), second, 40 * second, 40.0, ops))
        assert line is not None
        metrics.observe(line)
    fields = series_fields(metrics.throughput_points, metrics.latency_points)
    assert fields["series"]["latencyAvgUs"] == [300.0, None, 300.0]
    a = document(0, [(1, 100.0), (2, 300.0)]) | {
        "series": {"intervalSeconds": 1.0, "throughput": [100.0, 300.0], "startSeconds": 1}
    }
    a["series"]["latencyAvgUs"] = [1000.0, None]
    b = document(1, [(1, 300.0), (2, 100.0)])
    b["series"]["latencyAvgUs"] = [2000.0, 500.0]
    validate(a)
    merged = merge_documents([a, b])
    validate(merged)
    assert merged["series"]["latencyAvgUs"] == [1750.0, 500.0]
    assert "latencyAvgUs" not in merge_documents([a, document(1, [(1, 1.0)])])["series"]
