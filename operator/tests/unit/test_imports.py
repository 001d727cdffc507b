"""Unit tier: imports between the operator's parts point one way.

The configuration sits below the controllers (it imports none of them), and a BenchmarkRun
reaches its MongoCluster's I/O only through mongocluster.interface (its pure modules, names and
builders, it may import).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mongobench import mongocluster

pytestmark = pytest.mark.unit

PACKAGE = Path(mongocluster.__file__).parent.parent
CONTROLLERS = ("mongobench.mongocluster", "mongobench.benchmarkrun", "mongobench.experiment")
# What of a MongoCluster's I/O another controller may import.
DOOR = "mongobench.mongocluster.interface"


def io_imports(source: str) -> list[str]:
    """The MongoCluster I/O modules `source` imports, at any depth (function bodies too),
    besides the interface."""
    act = PACKAGE / "mongocluster" / "act"
    io = {f"mongobench.mongocluster.act.{p.stem}" for p in act.glob("*.py")}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found += [n for n in names if n in io]
    return found


def test_the_probe_sees_an_import_of_the_clusters_io() -> None:
    source = (
        "from mongobench.mongocluster.interface import Cluster\n"
        "from mongobench.mongocluster.build import labels\n"
        "def f():\n    from mongobench.mongocluster.act.provision import desired\n"
        "import mongobench.mongocluster.act.reconcile\n"
        "from mongobench.mongocluster.act import rolling\n"
    )
    assert sorted(io_imports(source)) == [
        "mongobench.mongocluster.act.provision",
        "mongobench.mongocluster.act.reconcile",
        "mongobench.mongocluster.act.rolling",
    ]


def test_a_benchmarkrun_reaches_its_clusters_io_only_through_the_interface() -> None:
    reaching = {
        path.name: found
        for path in sorted((PACKAGE / "benchmarkrun").rglob("*.py"))
        if (found := io_imports(path.read_text()))
    }
    assert reaching == {}, f"import {DOOR} instead"


def test_the_configuration_imports_no_controller() -> None:
    code = "import json, sys, mongobench.config\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    assert "mongobench.config" in loaded
    assert [m for m in loaded if m.startswith(CONTROLLERS)] == []
