"""Unit tier: each controller package (mongocluster/, benchmarkrun/, experiment/) keeps its
modules in folders that say what they may do, and its pure folders (build/, decide/) import
nothing that talks to the API, to MongoDB or over HTTP.

Each pure module is imported in a fresh interpreter (imports are transitive, and a test process
has long imported everything), then the loaded modules are listed.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

# What talks to the Kubernetes API, to MongoDB or over HTTP, directly or through the operator's
# wrappers (the MongoDB administration loads pymongo only with its first client).
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
PURE_FOLDERS = ("build", "decide")


@dataclass(frozen=True)
class Controller:
    package: str
    io_folders: tuple[str, ...]  # besides the pure ones
    top_level: frozenset[str]  # modules outside the folders
    min_pure: int  # a floor, so that an emptied folder is noticed

    @property
    def path(self) -> Path:
        return Path(importlib.import_module(f"mongobench.{self.package}").__file__ or "").parent

    def modules_in(self, folder: str) -> list[str]:
        return sorted(
            f"{folder}.{p.stem}" for p in (self.path / folder).glob("*.py") if p.stem != "__init__"
        )

    def pure(self) -> list[str]:
        return [m for folder in PURE_FOLDERS for m in self.modules_in(folder)]


CONTROLLERS = (
    # interface: the door other controllers use (I/O).
    Controller("mongocluster", ("act",), frozenset({"__init__", "interface"}), 20),
    # telemetry: the Prometheus client and the step's queries.
    Controller("benchmarkrun", ("telemetry", "act"), frozenset({"__init__"}), 10),
    Controller("experiment", ("act",), frozenset({"__init__"}), 4),
)
PURE = [(c.package, m) for c in CONTROLLERS for m in c.pure()]


def loaded_by(module: str) -> list[str]:
    """The forbidden modules that importing mongobench.`module` loads."""
    code = (
        "import importlib, json, sys\n"
        f"importlib.import_module('mongobench.{module}')\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(out.stdout)
    return [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]


@pytest.mark.parametrize("controller", CONTROLLERS, ids=lambda c: c.package)
def test_every_module_sits_in_a_folder_that_says_what_it_does(controller: Controller) -> None:
    path = controller.path
    assert {p.stem for p in path.glob("*.py")} == controller.top_level
    folders = {p.name for p in path.iterdir() if (p / "__init__.py").exists()}
    assert folders == {*PURE_FOLDERS, *controller.io_folders}
    assert len(controller.pure()) >= controller.min_pure
    assert all(controller.modules_in(f) for f in controller.io_folders)


@pytest.mark.parametrize(("package", "module"), PURE)
def test_pure_module_imports_no_api_mongodb_or_http_client(package: str, module: str) -> None:
    assert loaded_by(f"{package}.{module}") == [], f"mongobench.{package}.{module} imports them"


@pytest.mark.parametrize(
    ("module", "talker"),
    [
        ("mongocluster.act.reconcile", "mongobench.mongo.admin"),
        ("benchmarkrun.telemetry.cpu", "urllib.request"),
        ("experiment.act.reconcile", "mongobench.k8s.client"),
    ],
)
def test_the_check_would_see_an_io_module(module: str, talker: str) -> None:
    """The probe is not vacuous: an I/O module of each controller loads what it talks with."""
    assert talker in loaded_by(module)
