"""Unit tier: the HTML report opens with its conclusion: the question (configurations and what
differs), the answer (a headline per configuration, the forest plot of the changes, the
verdicts, what to change for invalid trials); then the figures, then the tables; warnings
grouped by kind with counts; each run's trials in a collapsed section."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pytest
from builders import benchmark_run

from mongobench_cli import report
from mongobench_results import compare, records, validity

pytestmark = pytest.mark.unit


def test_the_report_opens_with_the_question_and_the_answer(tmp_path: Path) -> None:
    base = benchmark_run("base", workloads=("a", "c"), seed=1)
    twin = benchmark_run("twin", workloads=("a", "c"), seed=2)
    other = benchmark_run(
        "other",
        workloads=("a", "c"),
        clients=2,
        throughput={"a": 1300.0, "c": 1000.0},
        invalid={f"c#{i}": [validity.CLIENT_BOUND] for i in (1, 2, 3)},
        seed=3,
    )
    runs = [base, twin, other]
    result = compare.compare(
        [compare.RunInput(r.key, r.run) for r in runs], baseline="base", metrics=("throughput",)
    )
    page = report.write(runs, result, tmp_path).html.read_text()
    order = [
        "<h2>Question</h2>",
        "clients.parallelism 2 vs 1",
        "<h2>Answer</h2>",
        html.escape(compare.headlines(result)[1]),
        "changes.png",  # the forest plot, on the first screen
        html.escape(validity.advice(validity.CLIENT_BOUND)),
        "<h2>Throughput</h2>",  # then the figures
        "<h2>Runs</h2>",  # then the tables
        "<h2>Comparison</h2>",
        "<h2>Warnings</h2>",
        "<h2>Trials</h2>",
    ]
    at = [page.find(x) for x in order]
    assert -1 not in at and at == sorted(at), list(zip(order, at, strict=True))
    assert "twin</b>: 1 run(s); against the baseline: the same spec: an A/A pair" in page
    assert "faster on a" in page and "no valid trials on c" in page
    # Warnings by kind, counted: every run's short-run warning is one line, not 18.
    short = [w for r in runs for w in records.warnings(r.run) if "short run" in w]
    assert len(short) > 3
    assert f"<b>{len(short)} &times;</b> short run (… s)" in page
    # Each run's trials, collapsed, the invalid ones counted and advised.
    assert "<details><summary>other: 6 trials, 3 invalid</summary>" in page
    assert "<details><summary>base: 6 trials</summary>" in page
    assert page.count("to change: " + html.escape(validity.advice(validity.CLIENT_BOUND))) == 3


def test_the_forest_has_a_row_per_workload_and_metric() -> None:
    base = benchmark_run("base", workloads=("a", "c"), seed=1)
    other = benchmark_run("other", workloads=("a", "c"), clients=2, seed=3)
    result = compare.compare(
        [compare.RunInput(r.key, r.run) for r in (base, other)],
        baseline="base",
        metrics=("throughput", "p99"),
    )
    rows = report.forest_rows(result)
    labels = [label for label, _ in rows]
    assert labels[:2] == ["a  throughput", "a  READ p99"] and "c  READ p99" in labels
    assert len(labels) == len({(r.workload, r.metric.id) for r in result.rows})
    assert all(len(cells) == 1 and cells[0].configuration == "other" for _, cells in rows)


def test_a_load_measured_once_is_no_invalid_row_in_the_answer(tmp_path: Path) -> None:
    """The demo's shape: each run loads once. The answer's verdicts count the workloads only
    ("too few valid trials" for a load that can have none would read as a failure) and say
    in one line that the load has no verdict."""
    runs = [
        benchmark_run("base", workloads=("a",), loads=1, seed=1),
        benchmark_run("other", workloads=("a",), loads=1, clients=2, seed=2),
    ]
    result = compare.compare(
        [compare.RunInput(r.key, r.run) for r in runs], baseline="base", metrics=("throughput",)
    )
    assert compare.measured_once(result) == ["load"]
    page = report.write(runs, result, tmp_path).html.read_text()
    start = page.index("<summary>Verdicts per workload and metric")
    summary = page[start : page.index("</summary>", start)]
    assert "too few valid trials" not in summary and "no valid trials" not in summary
    assert "workload load: measured once a run, no verdict" in page


def test_no_empty_forest_when_no_comparison_has_an_interval(tmp_path: Path) -> None:
    """A reduced study's shape: one trial a workload. The first screen gives the headline's
    reason ("too few valid trials") in one line, not a frame of markers with none in it."""
    runs = [
        benchmark_run("base", workloads=("a", "c"), repetitions=1, loads=1, seed=1),
        benchmark_run("other", workloads=("a", "c"), repetitions=1, loads=1, clients=2, seed=2),
    ]
    result = compare.compare([compare.RunInput(r.key, r.run) for r in runs], baseline="base")
    assert not any(report._forest_point(r) for _, rows in report.forest_rows(result) for r in rows)
    out = report.write(runs, result, tmp_path)
    assert not (tmp_path / "figures" / "changes.png").exists()
    assert "too few valid trials on a, c" in out.html.read_text()


def test_one_configuration_opens_with_what_was_measured_not_empty_verdicts(
    tmp_path: Path,
) -> None:
    """A study's single run (study 4's week): no Question of a difference, no Answer with an
    empty tally; one line says there is nothing to compare and how to get a verdict."""
    run = benchmark_run("week", workloads=("a",), repetitions=2, seed=4)
    result = compare.compare([compare.RunInput(run.key, run.run)])
    page = report.write([run], result, tmp_path).html.read_text()
    assert "<h2>Answer</h2>" not in page and "Verdicts per workload" not in page
    assert "<h2>Measured</h2>" in page
    assert "1 run(s) of one configuration, <b>week</b>: nothing to compare it with here" in page


def test_the_shard_distribution_names_a_bar_by_its_configuration_where_it_is_one_run(
    tmp_path: Path,
) -> None:
    """Study 4's shard-key test: a run per key, so a bar reads `shardKey=ts`, not the run's
    generated name; a configuration of several runs keeps a bar per run, named by the run."""

    class Labels(report._Figures):
        seen: list[str] = []

        def save(self, fig: Any, name: str, section: str, caption: str) -> None:
            Labels.seen = [t.get_text() for t in fig.axes[0].get_yticklabels()]
            super().save(fig, name, section, caption)

    runs = []
    for i, key in enumerate(("hashed-id", "ts")):
        run = benchmark_run(f"keys-c{i}-r1", shards=2, labels={"cell": f"shardKey={key}"}, seed=i)
        load = next(s for s in run.run["status"]["steps"] if s["kind"] == "load")
        load["distribution"] = {
            "collection": "ycsb.usertable", "sharded": True, "documents": 100,
            "shards": [{"shard": f"s{j}", "documents": 50, "percent": 50.0, "chunks": 1}
                       for j in range(2)],
        }  # fmt: skip
        runs.append(run)
    result = compare.compare([compare.RunInput(r.key, r.run) for r in runs], group_by="cell")
    assert report.distribution_figure(Labels(tmp_path), runs, result)
    assert Labels.seen == ["shardKey=hashed-id", "shardKey=ts"]
    assert report.distribution_figure(Labels(tmp_path), runs)  # no comparison: the runs
    assert Labels.seen == ["keys-c0-r1", "keys-c1-r1"]
