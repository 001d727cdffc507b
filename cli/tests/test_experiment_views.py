"""Unit tier: how the CLI names and shows a BenchmarkExperiment (references, baseline, the
deploy-time table, the describe view)."""

from __future__ import annotations

import copy
import io

import pytest
from rich.console import Console

from mongobench_cli import experiment, sources

pytestmark = pytest.mark.unit

EXPERIMENT = {
    "metadata": {"name": "mx", "namespace": "lab"},
    "spec": {"order": "Random"},
    "status": {
        "phase": "Succeeded",
        "seed": 7,
        "progress": {"done": 2, "total": 2, "summary": "2/2", "current": ""},
        "cells": [
            {
                "name": "c0",
                "label": "shards=1",
                "values": {"shards": 1},
                "baseline": True,
                "cluster": "mx-k0",
                "phase": "Succeeded",
                "runs": [{"name": "mx-c0-r1", "repetition": 1, "phase": "Succeeded"}],
                "deployments": [
                    {
                        "pods": 7,
                        "provisionedSeconds": 4.0,
                        "configuredSeconds": 6.5,
                        "readySeconds": 7.0,
                    }
                ],
                "summary": {"a": {"n": 1, "throughput": 950.0}},
            },
            {
                "name": "c1",
                "label": "shards=2",
                "values": {"shards": 2},
                "baseline": False,
                "cluster": "mx-k1",
                "phase": "Failed",
                "runs": [{"name": "mx-c1-r1", "repetition": 1, "phase": "Failed"}],
                "deployments": [],
            },
        ],
        "comparison": {
            "baseline": "shards=1",
            "rows": [
                {
                    "workload": "a",
                    "metric": "throughput",
                    "configuration": "shards=1",
                    "n": 1,
                    "mean": 950.0,
                    "verdict": "",
                },
            ],
        },
    },
}


def test_experiment_references() -> None:
    assert sources.experiment_name("experiment/mx") == "mx"
    assert sources.experiment_name("bmx/lab/mx") == "lab/mx"
    assert sources.experiment_name("mx") is None
    assert sources.experiment_name("s3://bucket/experiment/mx") is None


def test_baseline_and_deploy_table() -> None:
    assert experiment.baseline(EXPERIMENT) == "shards=1"
    assert experiment.deploy_rows(EXPERIMENT) == [
        {
            "cell": "shards=1",
            "shards": 1,
            "deployment": 1,
            "pods": 7,
            "provisionedSeconds": 4.0,
            "configuredSeconds": 6.5,
            "readySeconds": 7.0,
        }
    ]


def test_describe_shows_cells_deploy_times_and_comparison() -> None:
    out = io.StringIO()
    Console(file=out, width=160).print(experiment.describe(EXPERIMENT))
    text = out.getvalue()
    assert "lab/mx" in text and "Random (seed 7)" in text and "2/2" in text
    assert "shards=1 *" in text and "7 pods 4.0/6.5/7.0" in text and "a=950.0" in text
    assert "r1:Failed" in text and "Against shards=1" in text


def test_describe_says_how_many_rounds_adaptive_repetitions_took() -> None:
    adaptive = copy.deepcopy(EXPERIMENT)
    adaptive["spec"] |= {"order": "RandomizedRounds", "repetitions": 2}
    adaptive["status"] |= {
        "rounds": 4,
        "repetitions": {
            "min": 2,
            "max": 6,
            "metric": "throughput",
            "relativeHalfWidth": 0.05,
            "cells": [
                {"name": "shards=1", "valid": 4, "done": True, "met": True},
                {"name": "shards=2", "valid": 3, "done": False},
            ],
        },
    }
    out = io.StringIO()
    Console(file=out, width=200).print(experiment.describe(adaptive))
    text = " ".join(out.getvalue().split())
    assert "RandomizedRounds (seed 7)" in text
    assert "4 of 2-6 until throughput +-5%: shards=1 met (n=4), shards=2 going on (n=3)" in text
    assert experiment.rounds_text(EXPERIMENT) == "3"  # no status.rounds: the spec's default


def test_follow_prints_changes_and_exits_with_the_phase() -> None:
    running = {
        "metadata": {"name": "mx"},
        "status": {
            "phase": "Running",
            "progress": {"summary": "0/2", "current": "shards=1 rep 1/1"},
        },
    }
    seen = iter([running, running, EXPERIMENT])
    out = io.StringIO()
    code = experiment.follow(
        lambda: next(seen), Console(file=out, width=160), interval=0, timeout=None
    )
    text = out.getvalue()
    assert code == 0
    assert text.count("mx: Running, cells 0/2, now shards=1 rep 1/1") == 1
    assert "mx: Succeeded, cells 2/2" in text
    assert (
        experiment.follow(lambda: None, Console(file=io.StringIO()), interval=0, timeout=None) == 3
    )


def test_report_plots_each_numeric_dimension_and_shows_the_deploy_table(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from builders import benchmark_run

    from mongobench_cli import report
    from mongobench_results import compare

    runs = []
    for shards in (1, 2, 3):
        for version in ("7.0.14", "8.0.4"):
            label = f"shards={shards},version={version}"
            runs.append(
                benchmark_run(
                    f"mx-{shards}-{version[0]}",
                    shards=shards,
                    version=version,
                    throughput={"a": 1000.0 * shards, "c": 1500.0 * shards},
                    labels={experiment.CELL_LABEL: label},
                    seed=shards,
                )
            )
    for r in runs:
        r.key = r.run["metadata"]["name"]
    result = compare.compare(
        [compare.RunInput(r.key, r.run) for r in runs],
        group_by=experiment.CELL_LABEL,
        baseline="shards=1,version=7.0.14",
    )
    sized = copy.deepcopy(EXPERIMENT)
    sized["status"]["cells"][1]["deployments"] = [
        {"pods": 11, "provisionedSeconds": 9.0, "configuredSeconds": 14.0, "readySeconds": 16.0}
    ]
    written = report.write(runs, result, tmp_path, [sized])
    names = {p.name for p in written.figures}
    # Two cluster sizes: seconds to Ready against pods deployed.
    assert "deploy-times.png" in names
    # shards is numeric (one line per version); version is not a number: no plot against it.
    assert {"scaling-shards-a.png", "scaling-shards-c.png"} <= names
    assert not any("scaling-version" in n for n in names)
    page = written.html.read_text()
    assert "Experiment cells plotted against shards" in page
    assert "<h2>Deploy times</h2>" in page and '<td class="num">7.0</td>' in page
    assert page.count("<h2>Deploy times</h2>") == 1 and '<td class="num">11</td>' in page


def test_cells_of_one_dimension_get_one_scaling_figure_not_one_per_workload(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Study 3's reduced cells (shards=1, shards=2): every workload against shards in one
    figure; a figure per workload of the same single line would only repeat it."""
    from builders import benchmark_run

    from mongobench_cli import report
    from mongobench_results import compare

    runs = [
        benchmark_run(
            f"one-{shards}",
            shards=shards,
            throughput={"a": 1000.0 * shards, "c": 1500.0 * shards},
            labels={experiment.CELL_LABEL: f"shards={shards}"},
            seed=shards,
        )
        for shards in (1, 2)
    ]
    for r in runs:
        r.key = r.run["metadata"]["name"]
    result = compare.compare(
        [compare.RunInput(r.key, r.run) for r in runs],
        group_by=experiment.CELL_LABEL,
        baseline="shards=1",
    )
    written = report.write(runs, result, tmp_path)
    names = {p.name for p in written.figures}
    assert "scaling-shards.png" in names
    assert not [n for n in names if n.startswith("scaling-shards-")]
    page = written.html.read_text()
    assert "differ only in <b>shards</b>" in page
    assert "Experiment cells plotted against" not in page


def test_a_cells_validity_says_the_reasons_its_runs_accepted() -> None:
    judged = {"valid": 3, "trials": 3, "judged": 3, "reasons": {}}
    assert experiment._valid_cell(judged) == "3/3"
    accepted = judged | {"accepted": {"NoisyNode": 1, "ClientBound": 3}}
    assert experiment._valid_cell(accepted) == "3/3 (accepted: ClientBound, NoisyNode)"
    assert experiment._valid_cell(None) == "-"


def test_describe_shows_a_duets_paired_table_and_the_pairs_left_out() -> None:
    duet = copy.deepcopy(EXPERIMENT)
    duet["spec"] = {"order": "Duet"}
    duet["status"]["comparison"]["duet"] = {
        "baseline": "shards=1",
        "other": "shards=2",
        "rows": [
            {
                "workload": "a",
                "metric": "throughput",
                "rounds": 2,
                "intervals": 120,
                "changePercent": 4.8,
                "lowPercent": 3.9,
                "highPercent": 5.7,
                "verdict": "faster",
            }
        ],
        "pairs": [
            {"duet": "mx-r1", "workload": "a", "valid": True},
            {"duet": "mx-r2", "workload": "a", "valid": True},
            {
                "duet": "mx-r3",
                "workload": "a",
                "valid": False,
                "reasons": [{"reason": "Starved", "message": "the smaller side had 12%"}],
            },
        ],
        "validPairs": 2,
    }
    out = io.StringIO()
    Console(file=out, width=160).print(experiment.describe(duet))
    text = out.getvalue()
    assert "Duet: shards=2 against shards=1, paired per second (2/3 pairs valid)" in text
    assert "+4.80%" in text and "[+3.90%, +5.70%]" in text and "faster" in text
    assert "left out: mx-r3 a: Starved (the smaller side had 12%)" in text
