"""Unit tier (local files only): `mongobench compare` on a duet's runs (order Duet) adds the
paired table, B against A from their per-second series, as text and in its JSON; the runs are
exported to archive folders and read back by the real command, so the archive keeps what the
pairing needs (spec.duet, each measured step's series and barrier instant)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from builders import benchmark_run
from typer.testing import CliRunner

from mongobench_cli import export
from mongobench_cli.app import app
from mongobench_cli.sources import LoadedRun

pytestmark = pytest.mark.unit


def duet_side(name: str, side: int, scale: float, rounds: int = 2) -> list[LoadedRun]:
    out = []
    for r in range(1, rounds + 1):
        run = benchmark_run(f"{name}-r{r}", workloads=("a",), repetitions=1, seed=r + side)
        spec = run.run["spec"]
        spec["duet"] = {"name": f"x-r{r}", "side": side, "peerParallelism": 1}
        spec.setdefault("labels", {})["experiment.cell"] = ("wc=1", "wc=majority")[side]
        for step in run.run["status"]["steps"]:
            if step.get("kind") == "run":
                step["result"]["startAt"] = f"2026-12-07T10:0{r}:00.000000Z"
                step["result"]["series"] = {
                    "intervalSeconds": 1.0,
                    "throughput": [
                        scale * 1000 * (1 + 0.3 * math.sin(i / 3 + r)) for i in range(40)
                    ],
                }
        out.append(run)
    return out


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    root: Path = tmp_path_factory.mktemp("duet")
    out = []
    for run in duet_side("x-c0", 0, 1.0) + duet_side("x-c1", 1, 0.9):
        export.export([run], str(root / run.run["metadata"]["name"]))
        out.append(str(root / run.run["metadata"]["name"]))
    return out


def test_compare_prints_the_duets_paired_table_with_its_verdict(folders: list[str]) -> None:
    result = CliRunner().invoke(
        app, ["compare", *folders, "--group-by", "experiment.cell"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "Duet: wc=majority against wc=1, paired per second (2/2 pairs valid)" in result.output
    line = next(x for x in result.output.splitlines() if x.strip().startswith("a ") and "%" in x)
    assert "throughput" in line and "-10.00%" in line and "slower" in line


def test_compare_json_carries_the_duet(folders: list[str]) -> None:
    result = CliRunner().invoke(
        app, ["compare", *folders, "--group-by", "experiment.cell", "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    paired = json.loads(result.output)["duet"]
    assert paired["rows"][0]["changePercent"] == pytest.approx(-10.0)
    assert paired["rows"][0]["verdict"] == "slower"
    assert [p["valid"] for p in paired["pairs"]] == [True, True]
