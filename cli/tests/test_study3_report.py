"""Unit tier (local files only): study 3's figures from archived runs of a one-factor-at-a-time
experiment: each timed query's run time against shards and against members, one line (the
baseline's), and the experiment's deploy-time table in the study's layout."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import benchmark_run
from typer.testing import CliRunner

from mongobench_cli import export, report
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
    """A run a cell (three repetitions of one find from one thread), archived to folders; more
    shards answer the scatter-gather find faster."""
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
    return folders


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


def test_the_report_draws_each_queries_run_time_against_shards_and_members(
    ofat_runs: list[str], tmp_path: Path
) -> None:
    args = ["report", *ofat_runs, "--group-by", CELL, "--baseline", label(BASE)]
    result = CliRunner().invoke(app, [*args, "--metric", "seconds", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    figures = {p.name for p in (tmp_path / "figures").iterdir()}
    assert {"run-time-find.png", "run-time-find-shards.png", "run-time-find-members.png"} <= (
        figures
    )
    page = (tmp_path / "report.html").read_text()
    assert "Workload find: run time against shards, one line per other dimensions" in page
    compared = CliRunner().invoke(app, ["compare", *args[1:], "--metric", "seconds", "--wide"],
                                  env={"COLUMNS": "250"})  # fmt: skip
    assert compared.exit_code == 0, compared.output
    assert "run time" in compared.output and "shards=3" in compared.output
