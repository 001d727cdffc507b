"""Unit tier (local files only): `mongobench compare --group-by` over several keys, and the
loads as rows of their own. Runs are made by builders.py (status as the operator writes it),
exported to archive folders and read back by the real command."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from builders import benchmark_run
from typer.testing import CliRunner

from mongobench_cli import export
from mongobench_cli.app import app

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def cloud_by_shards(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Two clouds x two shard counts, two runs a cell (pooled), each run with three loads:
    aws loads twice as fast, and five shards serve workload a 50% faster."""
    root = tmp_path_factory.mktemp("groups")
    folders = []
    seed = 100
    for cloud, load_tp in (("openstack", 1000.0), ("aws", 2000.0)):
        for shards, tp in ((3, 1000.0), (5, 1500.0)):
            for i in range(2):
                seed += 1
                name = f"{cloud}-{shards}-{i}"
                run = benchmark_run(
                    name,
                    labels={"cloud": cloud},
                    shards=shards,
                    workloads=("a",),
                    repetitions=2,
                    throughput=tp,
                    loads=2,
                    load_throughput=load_tp,
                    sd=10,
                    seed=seed,
                )
                export.export([run], str(root / name))
                folders.append(str(root / name))
    return folders


def invoke(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})
    assert result.exit_code == code, (result.output, result.exception)
    return result.output


def test_two_keys_pool_runs_by_their_combination(cloud_by_shards: list[str]) -> None:
    args = ["compare", *cloud_by_shards, "--group-by", "cloud,shards", "--metric", "throughput"]
    doc = json.loads(invoke(*args, "-o", "json"))
    assert doc["groupBy"] == ["cloud", "shards"]
    assert [c["name"] for c in doc["configurations"]] == [
        "cloud=openstack,shards=3",
        "cloud=openstack,shards=5",
        "cloud=aws,shards=3",
        "cloud=aws,shards=5",
    ]
    assert doc["configurations"][3]["group"] == {"cloud": "aws", "shards": "5"}
    assert len(doc["configurations"][3]["runs"]) == 2
    by = {(r["workload"], r["metric"], r["configuration"]): r for r in doc["rows"]}
    five = by[("a", "throughput", "cloud=openstack,shards=5")]
    assert five["group"] == {"cloud": "openstack", "shards": "5"}
    assert five["n"] == 4 and five["verdict"].endswith("better")  # two runs x two reps
    # The loads are rows of their own: aws loads in about half the time.
    aws = by[("load", "time to load", "cloud=aws,shards=3")]
    assert aws["unit"] == "s" and aws["n"] == 4 and aws["verdict"].endswith("better")
    assert by[("load", "throughput", "cloud=aws,shards=5")]["verdict"].endswith("better")

    table = invoke(*args, "--wide")
    assert "cloud,shards" in table  # the configuration column's header names both keys
    assert "time to load" in table
    shown = invoke(*args, "-o", "csv")
    rows = list(csv.DictReader(ln for ln in shown.splitlines() if not ln.startswith("#")))
    assert {"cloud", "shards"} <= set(rows[0]) and rows[0]["cloud"] == "openstack"
    assert "| cloud,shards |" in invoke(*args, "-o", "markdown")


def test_an_unknown_key_is_one_line_and_a_failure(cloud_by_shards: list[str]) -> None:
    # Exit status 2: the CLI's usage errors (one_line_errors).
    out = invoke("compare", *cloud_by_shards, "--group-by", "cloud,nope", code=2)
    assert out.strip().count("\n") == 0 and "'nope'" in out
    out = invoke("compare", *cloud_by_shards, "--group-by", "cloud,cloud", code=2)
    assert "each key once" in out


def test_pooling_targets_of_different_shapes_is_one_line_and_a_failure(tmp_path: Path) -> None:
    """Study 1's README grouped by platform,shards: its 3 x 3 "production" runs fell in one
    configuration with the 3 x 1 runs. Compare and report refuse, naming the key to add."""
    folders = []
    for name, members in (("three-nodes", 1), ("production", 3)):
        run = benchmark_run(name, platform="eks", shards=3, members=members, workloads=("a",))
        export.export([run], str(tmp_path / name))
        folders.append(str(tmp_path / name))
    for command in ("compare", "report"):
        extra = ["-o", str(tmp_path / "report")] if command == "report" else []
        out = invoke(command, *folders, "--group-by", "platform,shards", *extra, code=2)
        assert out.strip().count("\n") == 0, out
        assert "differ in members 1, 3" in out and "add members to --group-by" in out
    doc = json.loads(
        invoke("compare", *folders, "--group-by", "platform,shards,members", "-o", "json")
    )
    assert [c["name"] for c in doc["configurations"]] == [
        "platform=eks,shards=3,members=1",
        "platform=eks,shards=3,members=3",
    ]


def test_the_report_plots_time_to_load_against_the_dimensions(
    cloud_by_shards: list[str], tmp_path: Path
) -> None:
    invoke("report", *cloud_by_shards, "--group-by", "cloud,shards", "-o", str(tmp_path))
    figures = {p.name for p in (tmp_path / "figures").iterdir()}
    assert {"time-to-load.png", "time-to-load-shards.png"} <= figures
    page = (tmp_path / "report.html").read_text()
    assert "Time to load against shards, one line per other dimensions" in page
    assert "Time to load plotted against shards" in page


def test_the_report_shows_each_sharded_runs_documents_per_shard_beside_its_table(
    tmp_path: Path,
) -> None:
    """Studies 3 and 4's figure: the balance per shard, a bar a run; none for a replica set."""
    folders = []
    for name, shares in (("even", (50.0, 50.0)), ("skewed", (80.0, 20.0)), ("replica", ())):
        run = benchmark_run(name, shards=2 if shares else None, workloads=("a",), repetitions=1)
        load = next(s for s in run.run["status"]["steps"] if s["kind"] == "load")
        if shares:
            load["distribution"] = {
                "collection": "ycsb.usertable",
                "sharded": True,
                "documents": 1000,
                "shards": [
                    {"shard": f"{name}-shard{i}", "documents": int(10 * p), "percent": p,
                     "chunks": 2}
                    for i, p in enumerate(shares)
                ],
            }  # fmt: skip
        export.export([run], str(tmp_path / name))
        folders.append(str(tmp_path / name))
    invoke("report", *folders, "-o", str(tmp_path / "r"))
    assert "shard-distribution.png" in {p.name for p in (tmp_path / "r" / "figures").iterdir()}
    page = (tmp_path / "r" / "report.html").read_text()
    table, figure = page.index("<h2>Shard distribution</h2>"), page.index("shard-distribution.png")
    assert table < figure < page.index("<h2>Comparison</h2>")  # under its table
    assert "skewed-shard0 80.0% (2), skewed-shard1 20.0% (2)" in page

    invoke("report", folders[-1], "-o", str(tmp_path / "replica"))
    assert not (tmp_path / "replica" / "figures" / "shard-distribution.png").exists()


class _Kept:
    """The report's figures with their axes read before they are written and closed."""

    def __init__(self, folder: Path) -> None:
        from mongobench_cli import report

        self.inner = report._Figures(folder)
        self.axes: dict[str, list[tuple[str, list[str]]]] = {}

    def save(self, fig: Any, name: str, section: str, caption: str) -> None:
        self.axes[name] = [
            (ax.get_ylabel(), [t.get_text() for t in ax.get_legend().get_texts()])
            for ax in fig.axes
            if ax.get_legend() is not None
        ]
        self.inner.save(fig, name, section, caption)


def test_a_loads_records_per_second_have_their_own_axis_beside_the_workloads_operations(
    tmp_path: Path,
) -> None:
    """Throughput against shards and per workload: a load's records/s never on the workloads'
    ops/s axis (the larger figure flattened theirs, under their unit)."""
    from mongobench_cli import report
    from mongobench_results import compare

    runs = [
        benchmark_run(
            f"s{shards}",
            shards=shards,
            workloads=("a", "c"),
            repetitions=3,
            throughput=900.0 * shards,
            loads=1,
            load_throughput=6000.0 + shards,
            seed=shards,
        )
        for shards in (1, 3, 5)
    ]
    result = compare.compare([compare.RunInput(r.key, r.run) for r in runs])
    figs = _Kept(tmp_path)
    assert report.scaling_figure(figs, result) == "shards"  # type: ignore[arg-type]
    report.throughput_figure(figs, result)  # type: ignore[arg-type]
    assert figs.axes["scaling-shards"] == [
        ("operations per second (ops/s)", ["workload a", "workload c"]),
        ("records loaded per second (records/s)", ["load"]),
    ]
    assert figs.axes["throughput"] == [("operations per second (ops/s)", ["s1", "s3", "s5"])]
    assert figs.axes["throughput-load"] == [
        ("records loaded per second (records/s)", ["s1", "s3", "s5"])
    ]
