"""Unit tier: what a user sees of a knee search and of costs: `describe` shows the knee and the
cost per million operations, `report` draws the latency-versus-throughput curve with the limit
and the knee, `compare` has a cost row when the runs' steps carry prices."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders import benchmark_run
from typer.testing import CliRunner

from mongobench_cli import export
from mongobench_cli.app import app
from mongobench_cli.sources import LoadedRun
from mongobench_results import cost, knee, records

pytestmark = pytest.mark.unit

TARGET = knee.Target("p99", limit_ms=10.0, start=100, maximum=3200, resolution=0.05)


def with_knee(loaded: LoadedRun) -> LoadedRun:
    """The finished run as a knee search left it: probes (a server saturating at 1000 ops/s)
    before its runs, which are the runs at the knee, and status.knee."""
    run = loaded.run
    run["spec"]["knee"] = {"latency": {"percentile": "p99", "limitMs": 10.0}}
    steps = run["status"]["steps"]
    probes: list[knee.Probe] = []
    added: list[dict[str, Any]] = []
    while not (found := knee.search(TARGET, probes)).done:
        load = found.next_load
        assert load is not None
        p99_us = 1000 / (1 - min(load, 995) / 1000)
        probe = knee.Probe(load, min(load, 1000), p99_us)
        probes.append(probe)
        added.append(
            {
                "kind": "probe",
                "label": f"probe a #{len(probes)} ({load} ops/s)",
                "workload": "a",
                "phase": "Succeeded",
                "offeredOpsPerSecond": load,
                "result": {"throughput": probe.achieved, "operations": {"READ": {"p99": p99_us}}},
            }
        )
    runs = [s for s in steps if s.get("kind") == "run" and s.get("workload") == "a"]
    for s in runs:
        s["offeredOpsPerSecond"] = found.knee
    first = steps.index(runs[0])
    run["status"]["steps"] = steps[:first] + added + steps[first:]
    for i, s in enumerate(run["status"]["steps"]):
        s["index"] = i
    trials = [p for s in runs if (p := knee.probe_of(s, "p99")) is not None]
    run["status"]["knee"] = {"workloads": [knee.status(TARGET, found, trials, "a")]}
    return loaded


def priced(loaded: LoadedRun, price: float) -> LoadedRun:
    prices = cost.Prices.parse({"m5.large": price, "currency": "EUR"})
    run = loaded.run
    for entry, view in zip(run["status"]["steps"], records.steps(run), strict=True):
        if entry.get("kind") == "run" and view.seconds and view.result:
            ops = float(view.result.get("operationsTotal") or 0)
            entry["cost"] = cost.step_cost(prices, ["m5.large"] * 2, view.seconds, ops).to_dict()
    run["status"]["cost"] = {"currency": "EUR", "workloads": [{"workload": "a", "steps": 3}]}
    return loaded


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    root = tmp_path_factory.mktemp("knee")
    out = []
    for name, price, seed in (("cheap", 0.1, 1), ("dear", 0.3, 2)):
        loaded = priced(with_knee(benchmark_run(name, workloads=("a",), seed=seed)), price)
        export.export([loaded], str(root / name))
        out.append(str(root / name))
    return out


def test_describe_shows_the_knee_and_the_cost(folders: list[str]) -> None:
    out = invoke("describe", folders[0])
    assert "Saturation knee" in out and "probes / grid" in out
    assert f"/ {knee.grid_probes(TARGET)}" in out
    assert "Cost (EUR per million operations" in out and "2 m5.large" in out


def test_the_report_draws_the_knee_curve_with_its_table(folders: list[str], tmp_path: Path) -> None:
    invoke("report", *folders, "-o", str(tmp_path))
    figures = {p.name for p in (tmp_path / "figures").iterdir()}
    assert {"knee-cheap-a.png", "knee-dear-a.png"} <= figures
    page = (tmp_path / "report.html").read_text()
    assert "<h2>Knee</h2>" in page and "p99 latency against achieved throughput" in page
    assert "<h2>Saturation knee</h2>" in page


def test_compare_has_cost_per_million_operations_when_prices_are_given(
    folders: list[str],
) -> None:
    out = invoke("compare", *folders, "--wide")
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "cost (per Mops)" in line)
    assert "cheap" in lines[at] and "baseline" in lines[at]
    assert "dear" in lines[at + 1] and "worse" in lines[at + 1]  # three times the price
