"""Helpers of the runner tests: the runner as its own process, the result document schema.

A module of its own (not conftest): two test folders each have a conftest, and a plain
`from conftest import` would pick whichever pytest imported first.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

BENCH_JOBS = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((BENCH_JOBS.parent / "results" / "schema" / "v2.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(
    SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
)


def validate(doc: dict[str, Any]) -> None:
    errors = sorted(VALIDATOR.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


@dataclass
class RunnerResult:
    returncode: int
    doc: dict[str, Any]
    stderr: str


def runner_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MONGOBENCH_")}
    env.update(extra)
    return env


def run_runner(args: list[str], tmp_path: Path, timeout: float = 240, **env: str) -> RunnerResult:
    out = tmp_path / f"result-{len(list(tmp_path.glob('result-*.json')))}.json"
    proc = subprocess.run(
        [sys.executable, "-m", "mongobench_runner", *args, "--output", f"file:{out}"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=runner_env(**env),
        cwd=tmp_path,
    )
    assert out.is_file(), f"no result document; stderr:\n{proc.stderr[-3000:]}"
    return RunnerResult(proc.returncode, json.loads(out.read_text()), proc.stderr)


def established_to(port: int) -> int:
    """Established TCP connections to `port` on this machine (a JVM's are in tcp6, IPv4-mapped)."""
    lines = [
        line
        for table in ("/proc/net/tcp", "/proc/net/tcp6")
        for line in Path(table).read_text().splitlines()[1:]
    ]
    return sum(
        1
        for line in lines
        if (f := line.split())[3] == "01" and int(f[2].rsplit(":", 1)[1], 16) == port
    )


def peak_connections(args: list[str], tmp_path: Path, port: int) -> tuple[RunnerResult, int]:
    """The runner run with `args`, and the most connections to `port` seen while it ran."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        running = pool.submit(run_runner, args, tmp_path)
        peak = 0
        while not running.done():
            peak = max(peak, established_to(port))
            time.sleep(0.05)
        return running.result(), peak
