"""Unit tier (local files only): `mongobench compare --pair-by` draws a study's paired table
(study 1's AWS vs OpenStack per topology) in one command, and `report` draws its CPU figure
averaged over the database nodes for every run. Runs are made by builders.py (status and
resources as the operator and the archive write them), exported to archive folders and read
back by the real command."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest
from builders import benchmark_run
from typer.testing import CliRunner

from mongobench_cli import export, report
from mongobench_cli.app import EXIT_BAD_INPUT, app
from mongobench_cli.sources import LoadedRun
from mongobench_results import compare, records

pytestmark = pytest.mark.unit

TOPOLOGIES = ((3, 1), (5, 1), (3, 3))  # study 1's 3-node, 5-node and "production" 3 x 3
PAIR = ("--group-by", "platform,shards,members", "--pair-by", "platform", "--baseline-value", "aws")


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[str, LoadedRun]]:
    """Both clouds x the three topologies, a run of 5 repetitions each: OpenStack 20% slower on
    workload a, the same on c, its database node 15 points busier."""
    root = tmp_path_factory.mktemp("study-1")
    folders, runs = [], {}
    seed = 0
    for platform, slower, cpu in (("aws", 1.0, 40.0), ("openstack", 0.8, 55.0)):
        for shards, members in TOPOLOGIES:
            seed += 1
            name = f"{platform}-{shards}x{members}"
            run = benchmark_run(
                name,
                platform=platform,
                shards=shards,
                members=members,
                workloads=("a", "c"),
                repetitions=5,
                throughput={"a": 1000 * slower, "c": 2000.0},
                cpu=(cpu, 20.0),
                seed=seed,
                loads=1,  # measured once a run: no pair (no verdict to give)
            )
            export.export([run], str(root / name))
            folders.append(str(root / name))
            runs[name] = run
    return folders, runs


def invoke(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})
    assert result.exit_code == code, (result.output, result.exception)
    return result.output


def test_one_command_draws_the_table_topology_by_workload_within_100_columns(
    study: tuple[list[str], dict[str, LoadedRun]],
) -> None:
    out = invoke("compare", *study[0], *PAIR)
    lines = out.splitlines()
    assert max(map(len, lines)) <= 100  # even on a 250-column terminal
    header = next(line for line in lines if line.startswith("shards,members"))
    assert header.split() == [
        "shards,members", "workload", "aws", "(ops/s)", "openstack", "change", "95%", "CI", "g",
        "verdict",
    ]  # fmt: skip
    rows = [line.split() for line in lines if " [" in line]  # the rows: each has its interval
    # topology x workload, the topology named on its first row only
    assert [r[0] for r in rows] == [
        "shards=3,members=1", "c", "shards=5,members=1", "c", "shards=3,members=3", "c"
    ]  # fmt: skip
    for r in rows:
        verdict = " ".join(r[r.index(next(c for c in r if c.startswith("["))) + 3 :])
        workload = r[1] if r[0].startswith("shards=") else r[0]
        # a: OpenStack 20% slower, found; c: the same throughput, no difference
        assert verdict == ("slower" if workload == "a" else "no difference")
    assert "Hedges' g with the small-sample correction J" in out
    assert "the study's g lacked J" in out


def _throughputs(run: LoadedRun, workload: str) -> list[float]:
    return [
        float(records.throughput(s.result) or 0)
        for s in records.measured(run.run)
        if s.workload == workload and s.result
    ]


def _hedges_g_by_hand(a: list[float], b: list[float]) -> tuple[float, float]:
    """(g, d): the pooled-SD standardized difference with and without Hedges' exact J."""
    n1, n2 = len(a), len(b)
    m1, m2 = sum(a) / n1, sum(b) / n2
    v1 = sum((x - m1) ** 2 for x in a) / (n1 - 1)
    v2 = sum((x - m2) ** 2 for x in b) / (n2 - 1)
    df = n1 + n2 - 2
    d = (m2 - m1) / math.sqrt(((n1 - 1) * v1 + (n2 - 1) * v2) / df)
    j = math.gamma(df / 2) / (math.sqrt(df / 2) * math.gamma((df - 1) / 2))
    return d * j, d


def test_effect_size_is_hedges_g_with_the_small_sample_correction(
    study: tuple[list[str], dict[str, LoadedRun]],
) -> None:
    folders, runs = study
    doc = json.loads(invoke("compare", *folders, *PAIR, "-o", "json"))
    assert (doc["pairBy"], doc["baselineValue"], doc["values"]) == (
        "platform",
        "aws",
        ["openstack"],
    )
    assert doc["topologyKeys"] == ["shards", "members"]
    assert [(r["shards"], r["members"], r["workload"]) for r in doc["rows"]] == [
        (str(s), str(m), w) for s, m in TOPOLOGIES for w in ("a", "c")
    ]
    row = next(
        r for r in doc["rows"] if (r["shards"], r["members"], r["workload"]) == ("5", "1", "a")
    )
    g, d = _hedges_g_by_hand(
        _throughputs(runs["aws-5x1"], "a"), _throughputs(runs["openstack-5x1"], "a")
    )
    assert row["hedgesG"] == pytest.approx(g, rel=1e-9)
    assert row["hedgesGUncorrected"] == pytest.approx(d, rel=1e-9)
    # 5 + 5 repetitions: the uncorrected effect is 1/J = 1.108 times the corrected one
    assert d / g == pytest.approx(1.108, abs=1e-3)


def test_cpu_table_gives_the_difference_in_points_and_csv_every_column(
    study: tuple[list[str], dict[str, LoadedRun]],
) -> None:
    text = invoke("compare", *study[0], *PAIR, "--metric", "cpu", "-o", "csv")
    rows = list(csv.DictReader(line for line in io.StringIO(text) if not line.startswith("#")))
    assert len(rows) == len(TOPOLOGIES) * 2  # topology x workload, the database nodes only
    assert {r["metric"] for r in rows} == {"cpu database"}
    for column in ("aws mean", "openstack mean", "aws sd", "openstack n", "deltaCiLow",
                   "hedgesG", "hedgesGUncorrected", "p", "pAdjusted", "verdict"):  # fmt: skip
        assert column in rows[0]
    for r in rows:
        assert r["change"].split(" [")[0].endswith(" pp")
        assert float(r["delta"]) == pytest.approx(15.0, abs=2.5)
        assert r["verdict"] == "higher"
    assert text.startswith("# cpu: openstack against aws (platform)")
    markdown = invoke("compare", *study[0], *PAIR, "--metric", "cpu", "-o", "markdown")
    assert "| shards | members | workload | metric |" in markdown


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--group-by", "shards,members", "--pair-by", "platform", "--baseline-value", "aws"),
         "--pair-by 'platform' is not among the --group-by keys (shards, members)"),
        (("--group-by", "platform,shards,members", "--pair-by", "platform",
          "--baseline-value", "gcp"),
         "--baseline-value 'gcp' is no run's platform (aws, openstack)"),
        (("--pair-by", "platform", "--baseline-value", "aws"),
         "--pair-by platform needs --group-by with platform among its keys"),
        (("--group-by", "platform,shards,members", "--baseline-value", "aws"),
         "--baseline-value needs --pair-by"),
        (("--group-by", "platform,shards,members", "--pair-by", "platform"),
         "--pair-by platform needs --baseline-value"),
        ((*PAIR, "--metric", "cpu", "--metric", "throughput"), "give --metric once"),
        ((*PAIR, "--metric", "speed"), "unknown metric 'speed'"),
        ((*PAIR, "--baseline", "aws-3x1"), "with --pair-by use --baseline-value"),
        (("--group-by", "platform,shards", "--pair-by", "platform", "--baseline-value", "aws"),
         "add members to --group-by"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_a_non_zero_exit(
    study: tuple[list[str], dict[str, LoadedRun]], args: tuple[str, ...], message: str
) -> None:
    result = CliRunner().invoke(app, ["compare", *study[0], *args], env={"COLUMNS": "250"})
    assert result.exit_code == EXIT_BAD_INPUT
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines


def test_a_topology_measured_on_one_cloud_only_is_refused_by_name(
    study: tuple[list[str], dict[str, LoadedRun]],
) -> None:
    folders = [f for f in study[0] if not f.endswith("aws-5x1")]
    result = CliRunner().invoke(app, ["compare", *folders, *PAIR])
    assert result.exit_code == EXIT_BAD_INPUT
    assert "shards=5,members=1: no run with platform=aws to pair with" in result.output


def _with_second_database_node(run: LoadedRun, busy: float) -> LoadedRun:
    """The run with a second database node at a constant `busy` % in every step's series."""
    res = {}
    for s in records.measured(run.run):
        got = run.resources(s.index) or {}
        nodes = dict(got["cpuSeries"]["nodes"])
        first = nodes[f"{run.key}-db-0"]
        nodes["db-1"] = {
            "idle": [[t, 2 * (1 - busy / 100)] for t, _ in first["idle"]],
            "user": [[t, 2 * busy / 100] for t, _ in first["idle"]],
        }
        res[s.index] = {**got, "cpuSeries": {**got["cpuSeries"], "nodes": nodes}}
    for step in run.run["status"]["steps"]:
        if step.get("cpu"):
            step["cpu"]["nodes"].append({"name": "db-1", "role": "cluster", "avg": busy})
    loaded = LoadedRun(run.run, "fixture", resources_loader=res.get)
    loaded.key = run.key
    return loaded


def test_cpu_figure_series_average_the_database_nodes_of_every_run() -> None:
    """Unit tier: the figure's series are, per workload, one trace per trial of every run of the
    configuration, each the mean over its database nodes (never a client node) at each sample."""
    runs = {
        r.key: _with_second_database_node(r, busy=90.0)
        for r in (
            benchmark_run(f"aws-{i}", platform="aws", workloads=("a", "c"), repetitions=2,
                          cpu=(30.0, 5.0), seed=i)
            for i in (1, 2)
        )
    }  # fmt: skip
    (config,) = compare.configurations(
        [compare.RunInput(k, r.run) for k, r in runs.items()], "platform"
    )
    traces = report.node_average_cpu(config, runs)
    assert set(traces) == {"a", "c"}
    for workload, trials in traces.items():
        # every trial of both runs, not only the first run's
        assert sorted((t.run, t.repetition) for t in trials) == [
            ("aws-1", 1), ("aws-1", 2), ("aws-2", 1), ("aws-2", 2)
        ]  # fmt: skip
        for t in trials:
            run = runs[t.run]
            (step,) = [
                s for s in records.measured(run.run)
                if (s.workload, s.repetition) == (workload, t.repetition)
            ]  # fmt: skip
            series = (run.resources(step.index) or {})["cpuSeries"]["nodes"]
            first = dict(records.cpu_busy_series(series[f"{t.run}-db-0"]))
            assert step.start is not None and t.points[0][0] == 0.0  # since the step started
            for when, value in t.points:
                # the mean of the two database nodes; the client node (5%) is not in it
                assert value == pytest.approx((first[when + step.start.timestamp()] + 90.0) / 2)


def test_report_draws_the_cpu_figure_per_configuration(
    study: tuple[list[str], dict[str, LoadedRun]], tmp_path: Path
) -> None:
    invoke("report", *study[0], "--group-by", "platform,shards,members", "-o", str(tmp_path / "r"))
    pngs = {p.name for p in (tmp_path / "r" / "figures").glob("cpu-average-*.png")}
    assert len(pngs) == 2 * len(TOPOLOGIES)
    page = (tmp_path / "r" / "report.html").read_text()
    assert "CPU busy averaged over the database nodes at each sample, per workload" in page


def test_the_paired_table_of_completion_times_is_in_seconds(
    study: tuple[list[str], dict[str, LoadedRun]],
) -> None:
    """Study 2's table: completion times, not rates (`--metric seconds`: a workload's run time,
    a load's time to load), paired as throughput is; a longer time is the slower one."""
    lines = invoke("compare", *study[0], *PAIR, "--metric", "seconds").splitlines()
    header = next(line for line in lines if line.startswith("shards,members"))
    assert header.split()[2:4] == ["aws", "(s)"]
    rows = [line.split() for line in lines if " [" in line]
    assert len(rows) == 6  # 3 topologies x workloads a, c (the load, measured once, has none)
    verdicts = [" ".join(r[r.index(next(c for c in r if c.startswith("["))) + 3 :]) for r in rows]
    assert verdicts == ["slower", "no difference"] * 3
