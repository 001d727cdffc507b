"""Unit tier: the Argo CD health checks (manifests/gitops/argocd/resource_customizations), run by a
real Lua 5.1 interpreter (Argo CD runs them with gopher-lua, a Lua 5.1) over every case of their
health_test.yaml, in the layout and format Argo CD's own resource_customizations tests use.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1] / "gitops" / "argocd" / "resource_customizations"
KINDS = sorted(p.parent for p in ROOT.glob("*/*/health.lua"))
# What Argo CD accepts from a health script.
STATUSES = {"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}


def lua_literal(value: Any) -> str:
    """A Lua table constructor for a YAML value, as Argo CD hands `obj` to the script."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # JSON string escapes are valid Lua escapes for this text
    if isinstance(value, list):
        return "{" + ", ".join(lua_literal(v) for v in value) + "}"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"[{json.dumps(k)}] = {lua_literal(v)}" for k, v in value.items()) + "}"
        )
    raise TypeError(type(value))


def run_health(script: Path, obj: dict[str, Any]) -> dict[str, str]:
    lua = shutil.which("lua5.1")
    if lua is None:
        pytest.fail("lua5.1 is missing: run `make setup` (hack/setup.sh installs it from Debian)")
    # The script's top-level `return hs` becomes the return of a function, as in Argo CD.
    program = (
        f"obj = {lua_literal(obj)}\n"
        f"local check = assert(loadstring({json.dumps(script.read_text())}, 'health.lua'))\n"
        "local hs = check()\n"
        "io.write(hs.status or '', '\\n', hs.message or '')\n"
    )
    proc = subprocess.run([lua, "-"], input=program, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    status, _, message = proc.stdout.partition("\n")
    return {"status": status, "message": message}


def cases() -> list[Any]:
    out = []
    for kind in KINDS:
        spec = yaml.safe_load((kind / "health_test.yaml").read_text())
        for case in spec["tests"]:
            out.append(pytest.param(kind, case, id=f"{kind.name}-{Path(case['inputPath']).stem}"))
    return out


def test_every_kind_has_a_health_check_and_tests() -> None:
    assert [k.name for k in KINDS] == ["BenchmarkExperiment", "BenchmarkRun", "MongoCluster"]
    for kind in KINDS:
        tests = yaml.safe_load((kind / "health_test.yaml").read_text())["tests"]
        listed = {(kind / t["inputPath"]).resolve() for t in tests}
        assert listed == {p.resolve() for p in (kind / "testdata").glob("*.yaml")}


@pytest.mark.parametrize(("kind", "case"), cases())
def test_health(kind: Path, case: dict[str, Any]) -> None:
    obj = yaml.safe_load((kind / case["inputPath"]).read_text())
    got = run_health(kind / "health.lua", obj)
    assert got["status"] in STATUSES
    assert got == case["healthStatus"]


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_every_phase_of_the_crd_maps_to_a_health(kind: Path) -> None:
    """A phase added to the CRD without a thought for Argo CD shows up here."""
    crd_file = kind.name.lower() + "s"
    crd = yaml.safe_load((ROOT.parents[3] / "crds" / f"mongobench.io_{crd_file}.yaml").read_text())
    status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    phases = status["properties"]["phase"]["enum"]
    seen = set()
    for phase in phases:
        obj = {"metadata": {"name": "x", "generation": 1}, "status": {"phase": phase}}
        got = run_health(kind / "health.lua", obj)
        assert got["status"] in STATUSES - {"Missing", "Unknown"}, phase
        seen.add(got["status"])
    assert "Healthy" in seen and "Degraded" in seen and "Progressing" in seen
