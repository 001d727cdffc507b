"""Protocol tier: the images' install steps, run here as the Dockerfiles run them.

No container engine exists on the build machines, so the images themselves are built only where
Docker or Podman runs (`make images`). What goes into them is installed here by the very scripts
their Dockerfiles call: `hack/image/install-python.sh` (the runner, dependencies from uv.lock with
hashes checked, from PyPI) and `hack/image/jlink-jre.sh` (a Java runtime cut to the modules YCSB
uses). The result then runs a real YCSB load against FerretDB, so a missing module or package
fails here, not on a user's cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pymongo
import pytest

from localplane.ferretdb import running_ferretdb
from localplane.tools import REPO

pytestmark = pytest.mark.protocol

YCSB_HOME = REPO / "bench-jobs" / "ycsb-binding" / "target" / "ycsb"


def uv() -> str:
    cache = Path(os.environ.get("MONGOBENCH_CACHE", Path.home() / ".cache" / "mongobench"))
    found = cache / "uv-0.13.8" / "bin" / "uv"
    return str(found) if found.is_file() else (shutil.which("uv") or "uv")


def test_ycsb_image_contents_install_and_run_a_load(tmp_path: Path) -> None:
    prefix = tmp_path / "opt-mongobench"
    jre = tmp_path / "jre"
    # The two image stages are independent (as in the Dockerfile's multi-stage build): run them
    # side by side, the pip install mostly waits on the network while jlink compresses.
    steps = [
        subprocess.Popen(
            [
                "sh",
                "hack/image/install-python.sh",
                str(prefix),
                "--package mongobench-runner",
                "./bench-jobs/runner",
            ],
            cwd=REPO,
            env={**os.environ, "UV": uv(), "PYTHON": "python3.11"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        ),
        subprocess.Popen(
            ["sh", "hack/image/jlink-jre.sh", str(YCSB_HOME), str(jre)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        ),
    ]
    try:
        for step in steps:
            output, _ = step.communicate(timeout=600)
            assert step.returncode == 0, (step.args, output.decode(errors="replace")[-3000:])
    finally:
        for step in steps:
            if step.poll() is None:
                step.kill()
                step.wait()
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
