"""Unit tier: `compare`'s default, compact output (the renderer and the headlines the results
library words): it fits 100 columns, says per configuration which way it went against the
baseline, and says what to change for invalid trials."""

from __future__ import annotations

import io

import pytest
from builders import benchmark_run
from rich.console import Console

from mongobench_cli import render
from mongobench_results import compare, validity

pytestmark = pytest.mark.unit

WORKLOADS = ("a", "b", "c", "d", "e", "f")


def compared(*runs: object, metrics: tuple[str, ...] = ("throughput",)) -> compare.Comparison:
    return compare.compare(
        [compare.RunInput(r.key, r.run) for r in runs],  # type: ignore[attr-defined]
        baseline="base",
        metrics=metrics,
    )


def shown(result: compare.Comparison, width: int) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=width, highlight=False).print(render.compare_compact(result))
    return out.getvalue().splitlines()


def test_the_compact_table_fits_100_columns_without_breaking_a_figure() -> None:
    # Every default metric of all six workloads, three configurations with long names; a pipe's
    # console is 220 wide: the compact table keeps to 100 all the same.
    base = benchmark_run("base", workloads=WORKLOADS, seed=1)
    again = benchmark_run("base-again-the-a-a-twin", workloads=WORKLOADS, seed=2)
    two = benchmark_run("two-clients-of-the-same", workloads=WORKLOADS, clients=2, seed=3)
    result = compared(base, again, two, metrics=compare.DEFAULT_METRICS)
    for width in (220, 100):
        lines = shown(result, width)
        assert max(len(ln.rstrip()) for ln in lines) <= 100, width
    text = "\n".join(shown(result, 100))
    # Each figure whole on its line (no interval folded), each configuration's name too.
    changes = [r.change_text() for r in result.rows if not r.baseline]
    assert changes and all(c in text for c in changes)
    assert "base-again-the-a-a-twin" in text and "two-clients-of-the-same" in text
    # What is left for --wide is said, not lost.
    assert "--wide" in text and "p(t)" not in text and "Hedges g" not in text.split("--wide")[0]


def test_headlines_say_faster_slower_no_difference_and_no_valid_trials() -> None:
    base = benchmark_run("base", workloads=("a", "b", "c", "d"), seed=1)
    other = benchmark_run(
        "other",
        workloads=("a", "b", "c", "d"),
        clients=2,
        throughput={"a": 1300.0, "b": 1000.0, "c": 700.0, "d": 1000.0},
        invalid={f"d#{i}": [validity.CLIENT_BOUND] for i in (1, 2, 3)},
        seed=2,
    )
    result = compared(base, other)
    (line,) = compare.headlines(result)
    a = next(r for r in result.rows if r.workload == "a" and not r.baseline)
    c = next(r for r in result.rows if r.workload == "c" and not r.baseline)
    assert line == (
        "other vs base (clients.parallelism 2 vs 1): throughput "
        f"faster on a ({a.change_text()}); slower on c ({c.change_text()}); "
        "no difference on b; no valid trials on d"
    )
    assert a.change_text().startswith("+3") and c.change_text().startswith("-3")
    text = "\n".join(shown(result, 100))
    assert line.split(":")[0] in text
    # The invalid trials come with what to change (the results library's advice).
    advice = " ".join(" ".join(ln.split()) for ln in text.split("invalid trials")[1].splitlines())
    assert "ClientBound, 3 trials (other on d: 3)" in advice
    assert validity.advice(validity.CLIENT_BOUND) in advice


def test_an_a_a_twin_says_what_its_result_means() -> None:
    base = benchmark_run("base", workloads=("a",), seed=1)
    twin = benchmark_run("twin", workloads=("a",), seed=2)
    (line,) = compare.headlines(compared(base, twin))
    assert line.startswith("twin vs base (A/A: the same spec): throughput no difference on a")
    assert "a verdict here would be a false positive" in line
    assert compare.what_differs(*compared(base, twin).configurations) == []


def test_too_few_valid_trials_is_no_verdict() -> None:
    base = benchmark_run("base", workloads=("a",), seed=1)
    two = benchmark_run(
        "two", workloads=("a",), clients=2, invalid={"a#1": [validity.NOT_STEADY]}, seed=2
    )
    (line,) = compare.headlines(compared(base, two))
    assert line.endswith("throughput too few valid trials on a")


def test_an_interval_clear_of_zero_without_a_verdict_is_explained() -> None:
    # 8% faster everywhere, three trials a side: each interval is clear of 0, but Holm across
    # every metric of six workloads leaves some without a verdict; the reader is told why.
    base = benchmark_run("base", workloads=WORKLOADS, seed=1)
    other = benchmark_run("other", workloads=WORKLOADS, throughput=1080.0, seed=2)
    result = compared(base, other, metrics=compare.DEFAULT_METRICS)
    puzzling = [
        r
        for r in result.rows
        if r.metric.id == "throughput" and r.significant is False and r.change_text()[0] == "+"
    ]
    assert puzzling and all("[+" in r.change_text() for r in puzzling)
    text = " ".join(" ".join(shown(result, 100)).split())
    assert "an interval clear of 0 with no difference: each interval is on its own" in text


def test_a_headline_names_every_change_the_table_found_on_other_metrics() -> None:
    """ "no difference" on throughput must not hide a slower p99: each change the table judged on
    another metric is in the headline after "also"."""
    base = benchmark_run("base", workloads=WORKLOADS, seed=1)
    two = benchmark_run("two-clients", workloads=WORKLOADS, clients=2, seed=3)
    result = compared(base, two, metrics=("throughput", "p99"))
    (line,) = compare.headlines(result)
    changes = [
        r
        for r in result.rows
        if not r.baseline and r.metric.id != "throughput" and r.outcome() in ("faster", "slower")
    ]
    assert changes, "the fixture's two clients change some p99"
    for r in changes:
        assert f"{r.metric.id} {r.outcome()} on {r.workload} ({r.change_text()})" in line
    assert line.index("also") > line.index("throughput")


def test_a_load_measured_once_a_run_gets_no_headline_and_one_line() -> None:
    # The demo's shape: each run loads once, then measures its workloads three times. The load
    # can have no verdict: the headline speaks of the workloads only, the table gives it a line.
    base = benchmark_run("base", workloads=("a",), loads=1, seed=1)
    other = benchmark_run("other", workloads=("a",), loads=1, clients=2, seed=2)
    result = compared(base, other)
    assert compare.measured_once(result) == ["load"]
    (line,) = compare.headlines(result)
    assert "load" not in line and "on a" in line
    text = "\n".join(shown(result, 100))
    # One line under the table, not words folded into the table's narrow configuration cell.
    (once,) = [x for x in text.splitlines() if "measured once" in x]
    assert once.strip().startswith("workload load: measured once a run, no verdict")
    assert "too few valid trials" not in text


def test_a_table_without_any_verdict_says_so_instead_of_counting_zero_comparisons() -> None:
    invalid = {f"a#{i}": [validity.NOT_STEADY] for i in (1, 2, 3)}
    base = benchmark_run("base", workloads=("a",), invalid=invalid, seed=1)
    other = benchmark_run("other", workloads=("a",), clients=2, invalid=invalid, seed=2)
    result = compared(base, other)
    text = " ".join(" ".join(shown(result, 100)).split())
    assert "0 comparisons" not in text
    assert "no comparison had the valid trials for a verdict" in text


def test_two_external_databases_differ_and_one_secret_twice_is_an_a_a_pair() -> None:
    def external(name: str, secret: str, seed: int) -> object:
        spec = {"uriSecretRef": {"name": secret, "key": "uri"}, "database": name}
        return benchmark_run(name, workloads=("a",), spec=spec, seed=seed)

    base = external("base", "ferretdb-sqlite", 1)
    twin = external("twin", "ferretdb-sqlite", 2)
    other = external("other", "ferretdb-postgresql", 3)
    lines = compare.headlines(compared(base, twin, other))
    assert any(ln.startswith("twin vs base (A/A: the same spec)") for ln in lines), lines
    assert any(
        ln.startswith("other vs base (uriSecretRef ferretdb-postgresql vs ferretdb-sqlite)")
        for ln in lines
    ), lines
