"""Unit tier: benchmarkrun/'s pure folders (build/, decide/) import nothing that talks to the API,
to MongoDB or over HTTP; every module sits in a folder that says which it is.

Each pure module is imported in a fresh interpreter (imports are transitive, and a test process
has long imported everything), then the loaded modules are listed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mongobench import benchmarkrun

pytestmark = pytest.mark.unit

PACKAGE = Path(benchmarkrun.__file__).parent
PURE_FOLDERS = ("build", "decide")
FORBIDDEN = (
    "kubernetes",
    "kopf",
    "pymongo",
    "urllib3",
    "urllib.request",
    "mongobench.k8s.client",
    "mongobench.mongo.admin",
    "mongobench.mongo.connect",
    "mongobench.state",
)


def modules_in(folder: str) -> list[str]:
    return sorted(
        f"{folder}.{p.stem}" for p in (PACKAGE / folder).glob("*.py") if p.stem != "__init__"
    )


PURE = [m for folder in PURE_FOLDERS for m in modules_in(folder)]


def loaded_by(module: str) -> list[str]:
    code = (
        "import importlib, json, sys\n"
        f"importlib.import_module('mongobench.benchmarkrun.{module}')\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(out.stdout)
    return [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]


def test_every_run_module_sits_in_a_folder_that_says_what_it_does() -> None:
    assert {p.stem for p in PACKAGE.glob("*.py")} == {"__init__"}
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert folders == {*PURE_FOLDERS, "telemetry", "act"}
    assert len(PURE) > 10


@pytest.mark.parametrize("module", PURE)
def test_pure_module_imports_no_api_mongodb_or_http_client(module: str) -> None:
    assert loaded_by(module) == [], f"mongobench.benchmarkrun.{module} imports them"


def test_the_check_would_see_an_io_module() -> None:
    """The probe is not vacuous: the Prometheus client loads urllib.request."""
    assert "urllib.request" in loaded_by("telemetry.cpu")
