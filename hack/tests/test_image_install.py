"""Protocol tier: the images' install steps, run here as the Dockerfiles run them.

No container engine exists on the build machines, so the images themselves are built only where
Docker or Podman runs (`make images`). What goes into them is installed here by the very scripts
their Dockerfiles call: `hack/image/install-python.sh` (the runner and the operator, dependencies
from uv.lock with hashes checked; here from uv's cache, OFFLINE=1, where an image build takes
them from PyPI) and `hack/image/jlink-jre.sh` (a Java runtime cut to
the modules YCSB uses). The runner's then runs a real YCSB load against FerretDB, so a missing
module or package fails here, not on a user's cluster.
"""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pymongo
import pytest

from localplane.ferretdb import running_ferretdb
from localplane.tools import REPO, uv

pytestmark = pytest.mark.protocol

YCSB_HOME = REPO / "bench-jobs" / "ycsb-binding" / "target" / "ycsb"


def install(tmp_path: Path, selection: str, *packages: str) -> Path:
    """An image's Python environment, as its Dockerfile installs it; returns its prefix."""
    prefix = tmp_path / "opt-mongobench"
    subprocess.run(
        ["sh", "hack/image/install-python.sh", str(prefix), selection, *packages],
        cwd=REPO,
        # OFFLINE: from uv's cache (warm after `make setup`), never from PyPI.
        env={**os.environ, "UV": str(uv()), "PYTHON": "python3.11", "OFFLINE": "1"},
        check=True,
        capture_output=True,
        timeout=600,
    )
    return prefix


def run_python(prefix: Path, code: str, cwd: Path) -> Any:
    """`code` run by the installed environment's interpreter; the JSON it prints."""
    proc = subprocess.run(
        [str(prefix / "bin" / "python"), "-c", code],
        env={"PATH": f"{prefix / 'bin'}:/usr/bin:/bin", "HOME": str(cwd)},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_ycsb_image_contents_install_and_run_a_load(tmp_path: Path) -> None:
    jre = tmp_path / "jre"
    # The two image stages are independent (as in the Dockerfile's multi-stage build): run them
    # side by side, the install mostly waits on its downloads while jlink compresses.
    with ThreadPoolExecutor(2) as pool:
        python = pool.submit(
            install, tmp_path, "--package mongobench-runner", "./results", "./bench-jobs/runner"
        )
        java = pool.submit(
            subprocess.run,
            ["sh", "hack/image/jlink-jre.sh", str(YCSB_HOME), str(jre)],
            cwd=REPO,
            check=True,
            capture_output=True,
            timeout=600,
        )
        prefix = python.result()
        java.result()
    out = tmp_path / "result.json"
    with running_ferretdb(tmp_path / "fdb") as fdb:
        proc = subprocess.run(
            [
                str(prefix / "bin" / "mongobench-runner"),
                *("ycsb", "--phase", "load", "--workload", "a", "--threads", "2"),
                *("-p", "recordcount=100", "--output", f"file:{out}"),
            ],
            env={
                "PATH": f"{prefix / 'bin'}:{jre / 'bin'}:/usr/bin:/bin",
                "JAVA": str(jre / "bin" / "java"),
                "MONGOBENCH_YCSB_HOME": str(YCSB_HOME),
                # As the Dockerfile sets it (it copies bench-jobs/workloads there).
                "MONGOBENCH_WORKLOADS": str(REPO / "bench-jobs" / "workloads"),
                "MONGOBENCH_URI": f"{fdb.uri}ycsb_image",
                "HOME": str(tmp_path),
            },
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        doc = json.loads(out.read_text())
        assert doc["status"] == "Succeeded" and doc["operationsTotal"] == 100
        count = pymongo.MongoClient(fdb.uri)["ycsb_image"]["usertable"].count_documents({})
        assert count == 100


def test_operator_image_contents_import_without_cli_plotting_or_numeric_packages(
    tmp_path: Path,
) -> None:
    """The operator image's install step (Dockerfile): its modules, an experiment's comparison
    included, import from what it installs, and none of the CLI's packages is there."""
    prefix = install(tmp_path, "--package mongobench", "./results", "./archive", "./operator")
    code = (
        "import importlib.util, json\n"
        "import mongobench.main, mongobench.experiment.act.reconcile\n"
        "from mongobench_results import stats\n"
        "d = stats.difference([100.0, 104.0, 98.0], [110.0, 111.0, 108.5])\n"
        "absent = ['kubernetes', 'matplotlib', 'typer', 'rich', 'numpy', 'scipy',\n"
        "          'mongobench_cli', 'mongobench_runner']\n"
        "print(json.dumps({'present': [m for m in absent if importlib.util.find_spec(m)],\n"
        "                  'p': d.welch_p}))"
    )
    out = run_python(prefix, code, tmp_path)
    assert out["present"] == []
    assert 0 < out["p"] < 0.05


def test_operator_history_image_judges_change_points_without_the_cli(tmp_path: Path) -> None:
    """The operator-history image (Dockerfile with EXTRAS="--extra history"): Otava runs on the
    lock's numpy and scipy (its own pins overridden), and still no CLI or plotting package."""
    prefix = install(
        tmp_path, "--package mongobench --extra history", "./results", "./archive", "./operator"
    )
    code = (
        "import importlib.util, json, random\n"
        "import mongobench.experiment.act.history\n"
        "from mongobench_results import history\n"
        "r = random.Random(7)\n"
        "values = [r.gauss(1000, 20) for _ in range(40)]\n"
        "values += [r.gauss(900, 20) for _ in range(40)]\n"
        "absent = ['kubernetes', 'matplotlib', 'typer', 'rich', 'mongobench_cli']\n"
        "print(json.dumps({'present': [m for m in absent if importlib.util.find_spec(m)],\n"
        "                  'found': [f[0] for f in history.detect(values)]}))"
    )
    out = run_python(prefix, code, tmp_path)
    assert out["present"] == []
    assert any(abs(i - 40) <= 2 for i in out["found"]), out
