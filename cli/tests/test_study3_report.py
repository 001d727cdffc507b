"""Unit tier (local files only): study 3's figures from archived runs of a one-factor-at-a-time
experiment: each timed query's run time against shards and against members, one line (the
baseline's), and the experiment's deploy-time table in the study's layout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import benchmark_run
from rich.console import Console
from typer.testing import CliRunner

from mongobench_archive import open_root
from mongobench_cli import experiment, export, report
from mongobench_cli.app import app
from mongobench_results import compare

pytestmark = pytest.mark.unit

CELL = "experiment.cell"
BASE = {"shards": "1", "members": "1", "version": "7.0.14"}
# One factor at a time from BASE: shards 2 and 3, members 3, version 8.0.4 (5 cells).
OFAT = [BASE, BASE | {"shards": "2"}, BASE | {"shards": "3"}, BASE | {"members": "3"},
        BASE | {"version": "8.0.4"}]  # fmt: skip


def label(values: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in values.items())


@pytest.fixture(scope="module")
def ofat_runs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A run a cell (three repetitions of one find from one thread) and the experiment's
    summary, archived under one root; more shards answer the scatter-gather find faster."""
    root = tmp_path_factory.mktemp("ofat")
    folders = []
    for i, values in enumerate(OFAT):
        run = benchmark_run(
            f"cell{i}", labels={CELL: label(values)}, shards=int(values["shards"]),
            members=int(values["members"]), version=values["version"], workloads=("find",),
            operations=1, threads=1, throughput=float(values["shards"]), sd=0.01, seed=70 + i,
        )  # fmt: skip
        export.export([run], str(root / f"cell{i}"))
        folders.append(str(root / f"cell{i}"))
    open_root(str(root)).write_experiment(ended_experiment())  # as the operator leaves it
    return [str(root)]


def test_ofat_cells_draw_one_line_per_varied_factor() -> None:
    """The other factors' cells sit at this factor's baseline value: they are no lines of
    their own (a factorial's lines are kept, each with all its points)."""
    row = compare.Row.__new__(compare.Row)  # the lines only carry rows through
    values = {label(v): v for v in OFAT}
    lines = report._lines("shards", values, dict.fromkeys(values, row))
    assert list(lines) == ["members=1,version=7.0.14"]
    assert sorted(x for x, _ in lines["members=1,version=7.0.14"]) == [1.0, 2.0, 3.0]
    members = report._lines("members", values, dict.fromkeys(values, row))
    assert list(members) == ["shards=1,version=7.0.14"]
    assert len(members["shards=1,version=7.0.14"]) == 2
    factorial = {label(BASE | {"shards": s, "members": m}): BASE | {"shards": s, "members": m}
                 for s in ("1", "2") for m in ("1", "3")}  # fmt: skip
    both = report._lines("shards", factorial, dict.fromkeys(factorial, row))
    assert len(both) == 2 and all(len(p) == 2 for p in both.values())


def test_the_report_draws_each_queries_run_time_against_shards_members_and_version(
    ofat_runs: list[str], tmp_path: Path
) -> None:
    args = ["report", *ofat_runs, "--group-by", CELL, "--baseline", label(BASE)]
    result = CliRunner().invoke(app, [*args, "--metric", "seconds", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    figures = {p.name for p in (tmp_path / "figures").iterdir()}
    assert {
        "run-time-find.png", "run-time-find-shards.png", "run-time-find-members.png",
        "run-time-find-version.png",  # version vs version: 7.0.14 and 8.0.4 side by side
    } <= figures  # fmt: skip
    assert "deploy-times.png" in figures  # from the archived experiment's summary
    page = (tmp_path / "report.html").read_text()
    assert "Workload find: run time against shards, one line per other dimensions" in page
    compared = CliRunner().invoke(app, ["compare", *args[1:], "--metric", "seconds", "--wide"],
                                  env={"COLUMNS": "250"})  # fmt: skip
    assert compared.exit_code == 0, compared.output
    assert "run time" in compared.output and "shards=3" in compared.output


def deployment(pods: int, ready: float) -> dict[str, Any]:
    return {"pods": pods, "provisionedSeconds": ready / 4, "configuredSeconds": ready / 2,
            "readySeconds": ready}  # fmt: skip


def ended_experiment(design: str = "OneFactorAtATime") -> dict[str, Any]:
    """An ended experiment as the operator leaves it: its cells with their deploy timings (the
    baseline's cluster created twice: two deployments averaged)."""
    cells = [
        ({"shards": 1, "members": 1}, [deployment(3, 40.0), deployment(3, 44.0)]),
        ({"shards": 3, "members": 1}, [deployment(5, 60.0)]),
        ({"shards": 1, "members": 3}, [deployment(5, 70.0)]),
        ({"shards": 3, "members": 3}, []),  # a factorial's fourth cell, never Ready
    ][: 3 if design == "OneFactorAtATime" else 4]
    return {
        "apiVersion": "mongobench.io/v1alpha1", "kind": "BenchmarkExperiment",
        "metadata": {"namespace": "studies", "name": "sharded", "uid": "u-1"},
        "spec": {"design": design, "baseline": {"shards": 1, "members": 1}},
        "status": {"phase": "Succeeded", "cells": [
            {"label": label({k: str(v) for k, v in values.items()}), "values": values,
             "baseline": i == 0, "deployments": deployed}
            for i, (values, deployed) in enumerate(cells)
        ]},
    }  # fmt: skip


def test_the_deploy_time_table_has_a_row_per_cell_in_the_designs_layout() -> None:
    rows = experiment.deploy_table(ended_experiment())
    assert [list(r) for r in rows[:1]] == [
        ["factor", "value", "pods", "deployments", "provisioned s", "configured s", "ready s"]
    ]
    assert [(r["factor"], r["value"], r["pods"], r["deployments"]) for r in rows] == [
        ("baseline", "-", 3, 2), ("shards", "3", 5, 1), ("members", "3", 5, 1),
    ]  # fmt: skip
    assert (rows[0]["provisioned s"], rows[0]["configured s"], rows[0]["ready s"]) == (
        10.5, 21.0, 42.0,
    )  # fmt: skip
    factorial = experiment.deploy_table(ended_experiment("Factorial"))
    assert list(factorial[0])[:2] == ["shards", "members"] and len(factorial) == 4
    assert (factorial[3]["pods"], factorial[3]["deployments"], factorial[3]["ready s"]) == (
        None, 0, None,
    )  # fmt: skip


def test_deploy_times_are_drawn_from_the_archived_experiment(tmp_path: Path) -> None:
    """The live object is gone; its summary in the archive draws the same table."""
    open_root(str(tmp_path)).write_experiment(ended_experiment())
    out = CliRunner().invoke(app, ["deploy-times", str(tmp_path)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    lines = [ln.split() for ln in out.output.splitlines() if ln.strip()]
    assert "Deploy times: experiment studies/sharded" in out.output
    assert lines[1] == ["factor", "value", "pods", "deployments", "provisioned", "s",
                        "configured", "s", "ready", "s"]  # fmt: skip
    assert lines[3] == ["baseline", "-", "3", "2", "10.5", "21.0", "42.0"]
    assert lines[4][:3] == ["shards", "3", "5"] and lines[5][:3] == ["members", "3", "5"]
    csv = CliRunner().invoke(app, ["deploy-times", str(tmp_path), "-o", "csv"])
    assert csv.output.splitlines()[1] == (
        "factor,value,pods,deployments,provisioned s,configured s,ready s"
    )
    empty = CliRunner().invoke(app, ["deploy-times", str(tmp_path / "studies" / "none")])
    assert empty.exit_code != 0 and len(empty.output.strip().splitlines()) == 1


def test_describe_names_the_design() -> None:
    out = Console(width=200, record=True)
    out.print(experiment.describe(ended_experiment()))
    assert "Design    OneFactorAtATime" in out.export_text()


def test_an_archived_experiments_runs_compare_by_cell_against_its_baseline(
    tmp_path: Path,
) -> None:
    """From the archive as from the live object: the runs pool by their cell and the summary's
    baseline cell is the baseline, so the README's command needs neither flag (the reduced
    study's cells differ from the full one's). The baseline's run sorts last here: the first
    configuration is not what makes it the baseline."""
    for name, values in (("a-more", BASE | {"shards": "2"}), ("z-base", BASE)):
        run = benchmark_run(
            name, labels={CELL: label(values)}, shards=int(values["shards"]), workloads=("find",),
            seed=len(name),
        )  # fmt: skip
        export.export([run], str(tmp_path / name))
    summary = ended_experiment()
    summary["spec"]["baseline"] = BASE
    summary["status"]["cells"] = [
        {"label": label(BASE | {"shards": "2"}), "values": BASE | {"shards": "2"}},
        {"label": label(BASE), "values": BASE, "baseline": True},
    ]
    open_root(str(tmp_path)).write_experiment(summary)
    out = CliRunner().invoke(app, ["compare", str(tmp_path), "-o", "json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["baseline"] == label(BASE)
    assert {c["name"] for c in doc["configurations"]} == {
        label(BASE),
        label(BASE | {"shards": "2"}),
    }
