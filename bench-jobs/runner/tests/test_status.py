"""YCSB `-s` status lines, captured from real YCSB 0.17.0 runs of the binding against FerretDB."""

import math

import pytest
from prometheus_client import generate_latest

from mongobench_runner.metrics import LiveMetrics
from mongobench_runner.status import parse_status_line

pytestmark = pytest.mark.unit

START = "2026-11-22 05:45:29:268 0 sec: 0 operations; est completion in 0 second "
RUN = (
    "2026-11-22 05:45:30:214 1 sec: 68 operations; 67.93 current ops/sec; est completion in 14"
    " seconds [READ: Count=41, Max=70975, Min=2962, Avg=18910.71, 90=33535, 99=70975,"
    " 99.9=70975, 99.99=70975] [UPDATE: Count=29, Max=262655, Min=19600, Avg=61233.93,"
    " 90=132223, 99=262655, 99.9=262655, 99.99=262655] "
)
RUN2 = (
    "2026-11-22 05:45:36:214 7 sec: 719 operations; 124 current ops/sec; est completion in 3"
    " second [READ: Count=66, Max=32319, Min=1401, Avg=8942.14, 90=19055, 99=32319, 99.9=32319,"
    " 99.99=32319] [UPDATE: Count=58, Max=495103, Min=13352, Avg=63091.24, 90=163839,"
    " 99=495103, 99.9=495103, 99.99=495103] "
)
LAST = (
    "2026-11-22 05:45:38:671 9 sec: 1000 operations; 105.03 current ops/sec; [READ: Count=25,"
    " Max=14751, Min=904, Avg=6019.32, 90=9391, 99=14751, 99.9=14751, 99.99=14751] [CLEANUP:"
    " Count=2, Max=8823, Min=5, Avg=4412.5, 90=8823, 99=8823, 99.9=8823, 99.99=8823] [UPDATE:"
    " Count=23, Max=60927, Min=9992, Avg=17712.52, 90=28239, 99=60927, 99.9=60927, 99.99=60927] "
)
FAILED_LOAD = (
    "2026-11-22 05:45:28:903 0 sec: 0 operations; est completion in 106751991167300 days 15 hours"
    " [CLEANUP: Count=4, Max=9839, Min=1, Avg=2462.25, 90=9839, 99=9839, 99.9=9839,"
    " 99.99=9839] [INSERT: Count=0, Max=0, Min=0, Avg=0, 90=0, 99=0, 99.9=0, 99.99=0]"
    " [INSERT-FAILED: Count=4, Max=62015, Min=58112, Avg=60872, 90=62015, 99=62015,"
    " 99.9=62015, 99.99=62015] "
)


def test_first_line_has_no_rate_and_no_operations():
    s = parse_status_line(START)
    assert s is not None
    assert (s.elapsed_s, s.total_ops, s.current_ops_per_s, s.operations) == (0, 0, None, {})


def test_interval_statistics_per_operation():
    s = parse_status_line(RUN)
    assert s is not None
    assert s.timestamp == "2026-11-22 05:45:30:214"
    assert (s.elapsed_s, s.total_ops, s.current_ops_per_s) == (1, 68, 67.93)
    assert set(s.operations) == {"READ", "UPDATE"}
    read = s.operations["READ"]
    assert (read.count, read.min_us, read.max_us, read.avg_us) == (41, 2962, 70975, 18910.71)
    assert (read.p90_us, read.p99_us, read.p999_us, read.p9999_us) == (33535, 70975, 70975, 70975)
    assert s.operations["UPDATE"].count == 29


def test_final_line_without_estimate_and_failed_measurements():
    last = parse_status_line(LAST)
    assert last is not None and last.total_ops == 1000 and last.current_ops_per_s == 105.03
    assert set(last.operations) == {"READ", "CLEANUP", "UPDATE"}
    failed = parse_status_line(FAILED_LOAD)
    assert failed is not None
    assert failed.operations["INSERT-FAILED"].count == 4
    assert failed.operations["INSERT"].avg_us == 0


@pytest.mark.parametrize(
    "line",
    [
        "Loading workload...",
        "Starting test.",
        "DBWrapper: report latency for each error is false and specific error codes to track",
        "[OVERALL], RunTime(ms), 9458",
        "",
    ],
)
def test_other_output_is_not_a_status_line(line):
    assert parse_status_line(line) is None


def test_live_metrics_accumulate_latency_so_far():
    m = LiveMetrics(driver="ycsb", phase="run", workload="a", client_index=0)
    for line in (START, RUN, RUN2, LAST):
        parsed = parse_status_line(line)
        assert parsed is not None
        m.observe(parsed)
    text = generate_latest(m.registry).decode()
    samples = {}
    for row in text.splitlines():
        if row and not row.startswith("#"):
            key, _, value = row.rpartition(" ")
            samples[key] = float(value)
    assert samples["mongobench_client_operations"] == 1000
    assert samples["mongobench_client_throughput_ops_per_second"] == 105.03
    assert samples['mongobench_client_operation_total{operation="READ"}'] == 41 + 66 + 25
    expected_avg = (41 * 18910.71 + 66 * 8942.14 + 25 * 6019.32) / (41 + 66 + 25)
    assert math.isclose(
        samples['mongobench_client_latency_avg_microseconds{operation="READ"}'], expected_avg
    )
    assert samples['mongobench_client_latency_max_microseconds{operation="UPDATE"}'] == 495103
    assert (
        samples[
            'mongobench_client_interval_latency_microseconds{operation="UPDATE",quantile="0.99"}'
        ]
        == 60927
    )


def test_formatted_status_line_parses_back_as_ycsb_prints_it():
    """The Locust driver prints YCSB-format status lines: the same parser feeds live metrics."""
    from datetime import UTC, datetime

    from mongobench_results import hdr
    from mongobench_runner.status import format_status_line, interval_stats

    h = hdr.new_histogram()
    for v in (900, 1200, 1500, 40000):
        h.record_value(v)
    when = datetime(2026, 11, 22, 5, 45, 30, 214000, tzinfo=UTC)
    line = format_status_line(when, 7, 719, 124.0, {"READ": interval_stats(h)})
    assert line.startswith("2026-11-22 05:45:30:214 7 sec: 719 operations; 124.00 current ops/sec;")
    parsed = parse_status_line(line)
    assert parsed is not None
    assert (parsed.elapsed_s, parsed.total_ops, parsed.current_ops_per_s) == (7, 719, 124.0)
    read = parsed.operations["READ"]
    assert read.count == 4 and read.min_us == 900 and 39900 <= read.max_us <= 40100
    assert read.p90_us == read.p99_us == read.max_us
    assert read.avg_us == pytest.approx((900 + 1200 + 1500 + 40000) / 4, rel=0.01)
