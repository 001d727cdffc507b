"""Unit tier: mongocluster/'s pure folders (build/, decide/) import nothing that talks to the API
or to MongoDB; every module sits in a folder that says which it is.

Each pure module is imported in a fresh interpreter (imports are transitive, and a test
process has long imported everything), then the loaded modules are listed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mongobench import mongocluster as cluster

pytestmark = pytest.mark.unit

# What talks to the Kubernetes API or to MongoDB, directly or through the operator's wrappers.
FORBIDDEN = (
    "mongobench.mongo.admin",  # the MongoDB administration (pymongo loads with its first client)
    "kubernetes",
    "kopf",
    "pymongo",
    "urllib3",
    "mongobench.k8s.client",
    "mongobench.mongo.admin",
    "mongobench.mongo.connect",
    "mongobench.state",
)


PACKAGE = Path(cluster.__file__).parent
PURE_FOLDERS = ("build", "decide")
# Outside the folders: the package itself and the door other controllers use (I/O).
TOP_LEVEL = {"__init__", "interface"}


def modules_in(folder: str) -> list[str]:
    return sorted(
        f"{folder}.{p.stem}" for p in (PACKAGE / folder).glob("*.py") if p.stem != "__init__"
    )


PURE = [m for folder in PURE_FOLDERS for m in modules_in(folder)]


def test_every_cluster_module_sits_in_a_folder_that_says_what_it_does() -> None:
    assert {p.stem for p in PACKAGE.glob("*.py")} == TOP_LEVEL
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert folders == {*PURE_FOLDERS, "act"}
    assert len(PURE) > 20 and modules_in("act")


@pytest.mark.parametrize("module", PURE)
def test_pure_module_imports_no_api_or_mongodb_client(module: str) -> None:
    code = (
        "import importlib, json, sys\n"
        f"importlib.import_module('mongobench.mongocluster.{module}')\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = json.loads(out)
    talking = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert talking == [], f"mongobench.mongocluster.{module} imports {talking}"


def test_the_check_would_see_an_io_module() -> None:
    """The probe is not vacuous: an I/O module does load the MongoDB administration (which
    imports pymongo itself only when it first builds a client: mongobench.mongo.driver)."""
    code = (
        "import mongobench.mongocluster.act.reconcile, sys;"
        " print('mongobench.mongo.admin' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
