"""Unit tier: grouping runs into configurations, comparability, flags and benchstat-style
verdicts, on finished runs made by the code that writes them (finished_runs.py)."""

from __future__ import annotations

import pytest
from finished_runs import FinishedRun, benchmark_run

from mongobench_results import compare

pytestmark = pytest.mark.unit


def inputs(*runs: FinishedRun) -> list[compare.RunInput]:
    return [compare.RunInput(r.key, r.run) for r in runs]


def row(result: compare.Comparison, workload: str, metric: str, config: str) -> compare.Row:
    return next(
        r
        for r in result.rows
        if (r.workload, r.metric.id, r.configuration) == (workload, metric, config)
    )


def test_a_real_difference_is_shown_and_no_difference_is_a_tilde() -> None:
    base = benchmark_run("rs", throughput={"a": 1000, "c": 2000}, seed=1)
    new = benchmark_run("sharded", throughput={"a": 1300, "c": 2000}, shards=3, seed=2)
    result = compare.compare(inputs(base, new), metrics=("throughput",))
    a = row(result, "a", "throughput", "sharded")
    assert a.significant and a.verdict.startswith("+") and a.verdict.endswith("better")
    assert a.difference is not None and a.difference.welch_p is not None
    assert a.difference.ci_low is not None and a.difference.ci_low > 0  # excludes "no change"
    c = row(result, "c", "throughput", "sharded")
    assert c.verdict == "~" and c.significant is False
    assert row(result, "a", "throughput", "rs").verdict == "baseline"
    assert result.baseline == "rs"


def test_lower_latency_and_less_cpu_are_better_and_cpu_changes_in_points() -> None:
    base = benchmark_run("slow", throughput=1000, cpu=(60, 20), seed=3)
    new = benchmark_run("fast", throughput=2000, cpu=(40, 20), seed=4)
    result = compare.compare(inputs(base, new), metrics=("avg", "cpu"))
    read = row(result, "a", "READ avg", "fast")
    assert read.significant and read.verdict.startswith("-") and read.verdict.endswith("better")
    cpu = row(result, "a", "cpu database", "fast")
    assert cpu.metric.points and "pp" in cpu.verdict and cpu.verdict.endswith("better")
    assert cpu.difference is not None and cpu.difference.delta == pytest.approx(-20, abs=3)


def test_flags_small_samples_noise_and_littles_law() -> None:
    base = benchmark_run("base", repetitions=2, seed=5)
    noisy = benchmark_run("noisy", repetitions=3, sd=250, seed=6, little_broken=("a#1", "a#3"))
    result = compare.compare(inputs(base, noisy), metrics=("throughput",))
    assert any("n=2 < 3" in f for f in row(result, "a", "throughput", "base").flags)
    flags = row(result, "a", "throughput", "noisy").flags
    assert any(f.startswith("CV") and "> 10%" in f for f in flags)
    assert "Little's law fails in 2 of 3 steps" in flags


def test_runs_with_different_workload_parameters_are_not_comparable_and_say_why() -> None:
    base = benchmark_run("t4", threads=4)
    other = benchmark_run(
        "t8", threads=8, spec={"mongo": {"writeConcern": "majority"}, "database": "elsewhere"}
    )
    result = compare.compare(inputs(base, other), metrics=("throughput",))
    assert result.incomparable
    assert all("mongo.writeConcern acknowledged vs majority" in r for r in result.incomparable)
    # Where the data lives is no workload parameter, and the clients' concurrency is a
    # dimension users compare on purpose: said in a note, not refused.
    assert not [r for r in result.incomparable if "database" in r or "threads" in r]
    assert any("run.threads 4 vs 8" in n for n in result.notes)
    r = row(result, "a", "throughput", "t8")
    assert r.verdict == "not comparable" and r.significant is None


def test_one_client_against_two_is_a_comparison_not_a_refusal() -> None:
    one = benchmark_run("c1", spec={"clients": {"parallelism": 1}}, seed=3)
    two = benchmark_run("c2", spec={"clients": {"parallelism": 2}}, throughput=1500, seed=4)
    result = compare.compare(inputs(one, two), metrics=("throughput",))
    assert not result.incomparable
    assert result.notes == ["c2 differs from c1 in clients.parallelism 1 vs 2"]
    assert row(result, "a", "throughput", "c2").verdict.endswith("better")


def test_group_by_a_label_pools_the_repetitions_of_several_runs() -> None:
    runs = [
        benchmark_run("aws-1", labels={"cloud": "aws"}, repetitions=2, seed=7),
        benchmark_run("aws-2", labels={"cloud": "aws"}, repetitions=2, seed=8),
        benchmark_run("os-1", labels={"cloud": "openstack"}, repetitions=3, throughput=800, seed=9),
    ]
    result = compare.compare(inputs(*runs), group_by="cloud", baseline="openstack")
    assert [c.name for c in result.configurations] == ["openstack", "aws"]
    aws = row(result, "a", "throughput", "aws")
    assert aws.summary.n == 4 and aws.verdict.endswith("better")


def test_group_by_a_target_dimension_and_baseline_by_run_name() -> None:
    runs = [
        benchmark_run("three", shards=3, seed=10),
        benchmark_run("five", shards=5, throughput=1500, seed=11),
    ]
    result = compare.compare(inputs(*runs), group_by="shards", baseline="three")
    assert [c.name for c in result.configurations] == ["shards=3", "shards=5"]
    assert row(result, "a", "throughput", "shards=5").significant


def test_bad_input_is_a_comparison_error_with_one_line() -> None:
    runs = inputs(benchmark_run("x"), benchmark_run("y", seed=2))
    with pytest.raises(compare.ComparisonError, match="baseline 'z' is none of"):
        compare.compare(runs, baseline="z")
    with pytest.raises(compare.ComparisonError, match="no run has a label 'nope'"):
        compare.compare(runs, group_by="nope")
    with pytest.raises(compare.ComparisonError, match="unknown metric 'p42'"):
        compare.compare(runs, metrics=("p42",))
    with pytest.raises(compare.ComparisonError, match="nothing to compare"):
        compare.compare([])
    empty = benchmark_run("empty", workloads=())
    with pytest.raises(compare.ComparisonError, match="no measured step"):
        compare.compare(inputs(empty))


def test_the_rank_test_with_three_repetitions_cannot_decide_and_says_so() -> None:
    base = benchmark_run("u1", throughput=1000, seed=12)
    new = benchmark_run("u2", throughput=2000, seed=13)
    welch = compare.compare(inputs(base, new), metrics=("throughput",))
    rank = compare.compare(inputs(base, new), metrics=("throughput",), test="utest")
    assert row(welch, "a", "throughput", "u2").significant
    r = row(rank, "a", "throughput", "u2")
    assert r.p == pytest.approx(0.1) and r.verdict == "~"
    assert any("rank test needs n >= 4" in f for f in r.flags)
    assert any("fewer than 4 repetitions" in n for n in rank.notes)


def test_json_shape_carries_every_figure() -> None:
    base, new = benchmark_run("j1", seed=14), benchmark_run("j2", throughput=1200, seed=15)
    doc = compare.compare(inputs(base, new)).to_dict()
    assert doc["baseline"] == "j1" and doc["test"] == "welch"
    assert doc["configurations"][1]["shape"]["topology"] == "ReplicaSet"
    r = next(x for x in doc["rows"] if x["configuration"] == "j2" and x["metric"] == "throughput")
    for key in (
        "mean",
        "sd",
        "n",
        "ciLow",
        "ciHigh",
        "delta",
        "deltaCiLow",
        "deltaCiHigh",
        "relative",
        "welchP",
        "rankP",
        "hedgesG",
        "verdict",
        "flags",
        "values",
    ):
        assert key in r
    assert len(r["values"]) == 3
