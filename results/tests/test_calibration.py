"""Unit tier: A/A calibration (mongobench_results.calibration) on finished runs made by the code
that writes them (finished_runs.py): the false-positive rate over windows of rounds, the minimum
detectable effect at the observed noise, and what is refused."""

from __future__ import annotations

import math

import pytest
from finished_runs import benchmark_run

from mongobench_results import calibration, compare

pytestmark = pytest.mark.unit


def aa_runs(rounds: int, sd: float, shift: float = 0.0) -> list[compare.RunInput]:
    """An A/A experiment's runs: one per cell and round, one repetition each."""
    out = []
    for r in range(1, rounds + 1):
        for cell, base in (("a", 1000.0), ("b", 1000.0 + shift)):
            run = benchmark_run(
                f"aa-c{cell}-r{r}",
                workloads=("c",),
                repetitions=1,
                throughput=base,
                sd=sd,
                labels={
                    calibration.CELL_LABEL: f"calibration={cell}",
                    calibration.ROUND_LABEL: str(r),
                },
                seed=r * 2 + (cell == "b"),
            )
            out.append(compare.RunInput(run.key, run.run))
    return out


def test_the_mde_follows_the_textbook_formula() -> None:
    # n = 3 a side, CV 5 %: (t(.975, 4) + t(.8, 4)) * 0.05 * sqrt(2/3) = (2.776 + 0.941) * 0.0408
    got = calibration.mde(50.0, 1000.0, 3, 0.05)
    assert got is not None and math.isclose(got, 0.1518, abs_tol=5e-4)
    smaller = calibration.mde(50.0, 1000.0, 10, 0.05)
    assert smaller is not None and smaller < got  # more rounds, smaller detectable effect
    assert calibration.mde(50.0, 1000.0, 1, 0.05) is None


def test_an_aa_pair_reports_its_false_positives_and_detectable_effect() -> None:
    result = calibration.calibrate(aa_runs(10, sd=30.0), metrics=("throughput",))
    assert result.rounds == 10 and result.window == 3 and result.alpha == 0.05
    (row,) = result.rows
    assert (row.workload, row.metric) == ("c", "throughput")
    assert row.windows == 8 and row.independent == 3  # 10 rounds: 8 sliding windows of 3
    assert row.false_positive_rate is not None and row.false_positive_rate <= 0.25
    assert row.sd is not None and 10 < row.sd < 60  # the noise drawn (SD 30)
    assert row.mde is not None and row.mde_all is not None and row.mde_all < row.mde
    assert row.verdict == "~"
    d = result.to_dict()
    assert d["rows"][0]["falsePositiveRate"] == row.false_positive_rate


def test_a_real_difference_between_the_cells_shows_as_false_positives() -> None:
    """A/A with a broken B (a 20 % shift): the calibration says the setup is not A/A."""
    result = calibration.calibrate(aa_runs(6, sd=5.0, shift=200.0), metrics=("throughput",))
    (row,) = result.rows
    assert row.false_positives == row.windows == 4
    assert row.verdict.startswith("+")


def test_runs_that_are_no_calibration_are_refused_in_one_line() -> None:
    study = benchmark_run("study", labels={calibration.CELL_LABEL: "cache=1"})
    with pytest.raises(calibration.CalibrationError, match="cells calibration=a and calibration=b"):
        calibration.calibrate([compare.RunInput(study.key, study.run)])
    with pytest.raises(calibration.CalibrationError, match="at least 2"):
        calibration.calibrate(aa_runs(3, sd=5.0), window=1)
