"""Cluster tier: the README's `make demo`, as a newcomer runs it, on a reduced size (one workload,
shorter trials, fewer records: DEMO_ARGS), with its state in a test folder (MONGOBENCH_DEMO_DIR).
Real: the plane, the operator, YCSB in the harness kubelet, FerretDB on SQLite and FerretDB on
Debian's PostgreSQL. It must say its question, end with the three runs compared in a terminal's
100 columns (the configuration under test named by what differs, the A/A twin as one), each run's
trials judged (TrialsValid) and its adaptive repetitions concluded (TargetMet), and the HTML
report written."""

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
        "DEMO_ARGS": (
            "--workloads a --repetitions 2 --max-repetitions 3 --records 100 --seconds 10 "
            "--warm-servers 2"
        ),
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
    assert "the question: is FerretDB faster on PostgreSQL than on SQLite?" in out
    if len(os.sched_getaffinity(0)) >= 2:
        # The control plane's bursts are kept off the measured path's CPU.
        assert "the measured path on CPUs of its own: CPU" in out, out[-4000:]
    for run in ("demo-sqlite", "demo-postgresql", "demo-sqlite-again"):
        assert f"BenchmarkRun {run}:" in out, out[-4000:]
    # The operator's conclusions on each run, printed after its watch.
    assert out.count("TrialsValid ") == 3, out[-4000:]
    assert out.count("TargetMet ") == 3, out[-4000:]
    # The answer comes last and fits the terminal: a headline per configuration, the one under
    # test named by what differs (its database), the twin as an A/A pair.
    answer = out[out.index("the answer, on throughput (") :]
    assert "demo-postgresql vs demo-sqlite (uriSecretRef ferretdb-postgresql vs" in answer
    assert "demo-sqlite-again vs demo-sqlite (A/A" in answer
    assert max(len(line) for line in answer.splitlines()) <= 100, answer
    assert (tmp_path / "demo" / "report" / "report.html").is_file()
