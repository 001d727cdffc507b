"""The CLI as a user installs it with pip: `pip install mongobench-cli` from the wheels the
release builds (cli/release.sh wheels, `make cli-dist`).

Unit tier: the packages' metadata (one version, the results library an exact pin, the license
and homepage everywhere, no upper Python bound). Protocol tier (local processes only, no network:
the third-party packages come from the uv cache `make setup` filled, as uv.lock pins them): the
wheels built and installed into a fresh virtualenv with pip, from the built files only
(--no-index), then `mongobench --help` and `mongobench compare` on archive folders.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from builders import benchmark_run

from mongobench_cli import export

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ["operator", "bench-jobs/runner", "archive", "results", "cli"]
PUBLISHED = ["mongobench-results", "mongobench-archive", "mongobench-cli"]


def project(folder: str) -> dict[str, object]:
    return dict(tomllib.loads((REPO / folder / "pyproject.toml").read_text())["project"])


@pytest.mark.unit
@pytest.mark.parametrize("folder", PACKAGES)
def test_every_package_names_its_license_and_homepage(folder: str) -> None:
    meta = project(folder)
    assert meta["license"] == "Apache-2.0" and meta["license-files"] == ["LICENSE"]
    # The wheel carries the license text: a copy of the repository's, kept identical.
    assert (REPO / folder / "LICENSE").read_bytes() == (REPO / "LICENSE").read_bytes()
    assert b"Apache License" in (REPO / "LICENSE").read_bytes()[:200]
    urls = meta["urls"]
    assert isinstance(urls, dict) and urls["Homepage"].startswith("https://github.com/")
    # The code needs 3.11 (StrEnum, tomllib); nothing bounds it above (3.12 and 3.13 checked).
    assert meta["requires-python"] == ">=3.11"


@pytest.mark.unit
def test_published_packages_share_one_version_and_pin_each_other_exactly() -> None:
    versions = {project(f)["name"]: project(f)["version"] for f in PACKAGES}
    assert len(set(versions.values())) == 1, versions
    version = versions["mongobench-cli"]
    for folder in PACKAGES:
        for dep in project(folder).get("dependencies", []):  # type: ignore[attr-defined]
            if str(dep).startswith("mongobench-"):
                assert dep.endswith(f"=={version}"), (folder, dep)
    chart = (REPO / "charts" / "mongobench" / "Chart.yaml").read_text()
    assert f'appVersion: "{version}"' in chart  # the release tag is v<appVersion>


def uv() -> str:
    cache = Path(os.environ.get("MONGOBENCH_CACHE", Path.home() / ".cache" / "mongobench"))
    return str(cache / "uv-0.13.8" / "bin" / "uv")


OFFLINE = {**os.environ, "UV": uv(), "UV_OFFLINE": "1", "PIP_NO_INDEX": "1"}


def sh(*args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        args,
        cwd=REPO,
        env=env or OFFLINE,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, (args, result.stdout[-3000:], result.stderr[-3000:])
    return result.stdout


@pytest.mark.protocol
def test_pip_installs_the_built_wheels_into_a_fresh_venv_and_the_cli_works(
    tmp_path: Path,
) -> None:
    dist = tmp_path / "dist"
    sh("bash", "cli/release.sh", "wheels", str(dist))
    built = sorted(p.name for p in dist.glob("*.whl"))
    assert built == [
        "mongobench_archive-0.1.0-py3-none-any.whl",
        "mongobench_cli-0.1.0-py3-none-any.whl",
        "mongobench_results-0.1.0-py3-none-any.whl",
    ]
    # A fresh virtualenv with pip; the third-party dependencies as uv.lock pins them, from the
    # uv cache (the stand-in for PyPI: no network here).
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    sh(base, "-m", "venv", str(venv))
    sh(
        uv(),
        "sync",
        "--frozen",
        "--offline",
        "--quiet",
        "--inexact",
        "--no-default-groups",
        "--package",
        "mongobench-cli",
        "--no-install-workspace",
        env={**OFFLINE, "UV_PROJECT_ENVIRONMENT": str(venv)},
    )
    # What a user runs, from the built files only: a missing or unpublished dependency fails.
    sh(
        str(venv / "bin" / "pip"),
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-index",
        "--find-links",
        str(dist),
        "mongobench-cli",
    )
    # The installed distribution's metadata and code, as the fresh interpreter sees them.
    probe = (
        "import json, importlib.metadata as m, mongobench_cli;"
        "d = m.metadata('mongobench-cli');"
        "print(json.dumps({'license': d['License-Expression'], 'python': d['Requires-Python'],"
        " 'urls': d.get_all('Project-URL'), 'requires': d.get_all('Requires-Dist'),"
        " 'code': mongobench_cli.__file__}))"
    )
    meta = json.loads(sh(str(venv / "bin" / "python"), "-c", probe))
    assert meta["license"] == "Apache-2.0" and meta["python"] == ">=3.11"
    assert "Homepage, https://github.com/mongobench/mongobench" in meta["urls"]
    assert {"mongobench-results==0.1.0", "mongobench-archive==0.1.0"} <= set(meta["requires"])
    assert meta["code"].startswith(str(venv))  # the installed copy, not the workspace's

    env = {"PATH": "/usr/bin:/bin", "KUBECONFIG": "/nonexistent", "COLUMNS": "250"}
    assert "compare" in sh(str(venv / "bin" / "mongobench"), "--help", env=env)
    assert "Usage: kubectl mongobench" in sh(
        str(venv / "bin" / "kubectl-mongobench"), "--help", env=env
    )
    three, five = tmp_path / "plane-3", tmp_path / "plane-5"
    export.export(
        [benchmark_run("bench", shards=3, throughput={"a": 1000, "c": 2000}, seed=1)], str(three)
    )
    export.export(
        [benchmark_run("bench", shards=5, throughput={"a": 1300, "c": 2000}, seed=2)], str(five)
    )
    doc = json.loads(
        sh(
            str(venv / "bin" / "mongobench"),
            *("compare", str(three), str(five), "--metric", "throughput", "-o", "json"),
            env=env,
        )
    )
    row = next(r for r in doc["rows"] if r["workload"] == "a" and not r["baseline"])
    assert row["significant"] and row["verdict"].endswith("better")
