"""Unit tier (local files only): `mongobench calibrate` and the report's calibration section, on
an A/A calibration's runs exported to an archive folder (builders.py makes them with the
runner's and the operator's own code)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import benchmark_run
from test_cli_archives import invoke, run

from mongobench_cli import calibration as rendering
from mongobench_cli import export
from mongobench_results import calibration

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def aa(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An A/A experiment's 2 x 6 runs (one per cell and round) in one archive folder."""
    folder = tmp_path_factory.mktemp("aa") / "calibration"
    runs = [
        benchmark_run(
            f"aa-{cell}-r{r}",
            workloads=("c",),
            repetitions=1,
            throughput=1000.0,
            sd=25.0,
            labels={
                calibration.CELL_LABEL: f"calibration={cell}",
                calibration.ROUND_LABEL: str(r),
            },
            seed=10 * r + (cell == "b"),
        )
        for r in range(1, 7)
        for cell in "ab"
    ]
    export.export(runs, str(folder))
    return folder


def test_calibrate_reports_false_positives_and_the_detectable_effect(aa: Path) -> None:
    got = json.loads(invoke("calibrate", str(aa), "-o", "json", "--metric", "throughput"))
    assert got["rounds"] == 6 and got["window"] == 3 and got["alpha"] == 0.05
    (row,) = got["rows"]
    assert (row["workload"], row["metric"], row["windows"]) == ("c", "throughput", 4)
    assert 0 <= row["falsePositiveRate"] <= 0.5
    assert 0 < row["mdeAllRounds"] < row["mde"] < 1
    table = invoke("calibrate", str(aa), "--window", "2")
    assert "A/A calibration" in table and "MDE (n=window)" in table
    assert "windows of 2 consecutive rounds" in " ".join(table.split())


def test_a_report_states_the_calibration_it_ran_under(aa: Path, tmp_path: Path) -> None:
    study = tmp_path / "study"
    export.export([benchmark_run("study", seed=3)], str(study))
    out = tmp_path / "report"
    invoke("report", str(study), "-o", str(out), "--calibration", str(aa))
    page = (out / "report.html").read_text()
    assert "<h2>Calibration</h2>" in page
    assert f"ran under the A/A calibration <b>{aa}</b>" in page
    invoke("report", str(study), "-o", str(tmp_path / "plain"))
    assert "<h2>Calibration</h2>" not in (tmp_path / "plain" / "report.html").read_text()


def test_runs_that_are_no_calibration_are_one_line(tmp_path: Path) -> None:
    study = tmp_path / "study"
    export.export([benchmark_run("study", seed=3)], str(study))
    result = run("calibrate", str(study))
    assert result.returncode == 2
    assert result.stderr.startswith("error: an A/A calibration has runs of cells")
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_study_names_its_calibration_by_annotation() -> None:
    study = {"metadata": {"name": "s", "annotations": {calibration.ANNOTATION: "aa-rs3"}}}
    assert rendering.named([{"metadata": {"name": "other"}}, study]) == "aa-rs3"
    assert rendering.named([{"metadata": {"name": "other"}}]) is None


@pytest.mark.parametrize(
    "args",
    [
        ("calibrate", "calibration-rs3"),
        ("report", "experiment/study", "-o", "out", "--calibration", "calibration-rs3"),
    ],
    ids=["calibrate", "report --calibration"],
)
def test_a_calibration_given_as_a_run_name_is_one_line_naming_the_experiment_form(
    args: tuple[str, ...],
) -> None:
    # A name alone is one BenchmarkRun (one cell of the pair): refused before any request (the
    # kubeconfig does not exist), with the experiment form the user meant.
    result = run(*args)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: calibration-rs3 names one BenchmarkRun, one cell of an A/A calibration: give the "
        "calibration experiment, experiment/calibration-rs3 (or the runs of both its cells)"
    ]
