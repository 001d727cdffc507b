"""Cluster tier: the README's `make demo`, as a newcomer runs it, on a reduced size (one workload,
fewer records: DEMO_ARGS), with its state in a test folder (MONGOBENCH_DEMO_DIR). It must end
with the three runs compared (the A/A twin among them), each run's trials judged (TrialsValid)
and its adaptive repetitions concluded (TargetMet), and the HTML report written."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from localplane.tools import REPO

pytestmark = pytest.mark.cluster


def test_make_demo_runs_compares_and_judges_the_three_runs(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "MONGOBENCH_DEMO_DIR": str(tmp_path / "demo"),
        "DEMO_ARGS": "--workloads a --repetitions 2 --max-repetitions 3 --records 100",
    }
    done = subprocess.run(
        ["make", "--no-print-directory", "demo"],
        cwd=REPO,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    for run in ("demo-1client", "demo-1client-again", "demo-2clients"):
        assert f"BenchmarkRun {run}:" in out, out[-4000:]
    # The operator's conclusions on each run, printed after its watch.
    assert out.count("TrialsValid ") == 3, out[-4000:]
    assert out.count("TargetMet ") == 3, out[-4000:]
    # The comparison names the method of its verdicts and counts valid trials.
    assert "Holm" in out, out[-4000:]
    assert "valid" in out
    assert (tmp_path / "demo" / "report" / "report.html").is_file()
