"""Unit tier: the Argo CD health checks (manifests/gitops/argocd/resource_customizations) run on
gopher-lua, the Lua engine Argo CD embeds, by manifests/gitops/argocd/healthcheck (argocd-health):
every case of their health_test.yaml, in the layout and format of Argo CD's own
resource_customizations tests, with the object converted and the libraries opened as Argo CD's
application controller does for an argocd-cm customization (no `string` or `math`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from localplane.tools import REPO, argocd_health

pytestmark = pytest.mark.unit

ROOT = REPO / "manifests" / "gitops" / "argocd" / "resource_customizations"
KINDS = sorted(p.parent for p in ROOT.glob("*/*/health.lua"))
# What Argo CD accepts from a health script.
STATUSES = {"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}


def engine() -> Path:
    try:
        return argocd_health()
    except FileNotFoundError as err:
        pytest.fail(str(err))


def run_engine(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(engine()), *args], input=stdin, capture_output=True, text=True, check=False, timeout=60
    )


def evaluate(script: Path, obj: dict[str, Any], *, open_libs: bool = False) -> dict[str, str]:
    flags = ["-open-libs"] if open_libs else []
    proc = run_engine(*flags, "eval", str(script), stdin=json.dumps(obj))
    assert proc.returncode == 0, proc.stderr
    got: dict[str, str] = json.loads(proc.stdout)
    return got


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


@pytest.fixture(scope="module")
def report() -> dict[str, str]:
    """Each case's line of `argocd-health test` over the repository's checks, by input path."""
    proc = run_engine("test", str(ROOT))
    lines = proc.stdout.splitlines()
    assert lines and lines[-1] == f"{len(cases())} passed, 0 failed", proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stderr
    out = {}
    for line in lines[:-1]:
        verdict, _, rest = line.partition(" ")
        path, _, health = rest.partition(": ")
        out[str(Path(path).resolve())] = f"{verdict} {health}"
    return out


@pytest.mark.parametrize(("kind", "case"), cases())
def test_health(report: dict[str, str], kind: Path, case: dict[str, Any]) -> None:
    line = report[str((kind / case["inputPath"]).resolve())]
    verdict, _, health = line.partition(" ")
    assert verdict == "PASS"
    assert json.loads(health) == case["healthStatus"]
    assert case["healthStatus"]["status"] in STATUSES


def test_a_case_whose_expected_health_is_wrong_fails(tmp_path: Path) -> None:
    kind = tmp_path / "mongobench.io" / "BenchmarkRun"
    shutil.copytree(ROOT / "mongobench.io" / "BenchmarkRun", kind)
    spec = yaml.safe_load((kind / "health_test.yaml").read_text())
    failed = next(c for c in spec["tests"] if c["inputPath"] == "testdata/failed.yaml")
    failed["healthStatus"]["status"] = "Healthy"
    (kind / "health_test.yaml").write_text(yaml.safe_dump(spec))
    proc = run_engine("test", str(tmp_path))
    assert proc.returncode == 1
    fails = [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1 and "testdata/failed.yaml" in fails[0]
    assert '"status":"Healthy"' in fails[0] and '"status":"Degraded"' in fails[0]
    assert proc.stdout.splitlines()[-1] == f"{len(spec['tests']) - 1} passed, 1 failed"


def test_a_script_is_run_with_the_libraries_argo_cd_opens_for_a_customization(
    tmp_path: Path,
) -> None:
    """Argo CD opens package, base, table and a safe os (time, date) for an argocd-cm health check
    unless useOpenLibs is set: a script calling string.format works in a stock Lua and fails in
    Argo CD. Numbers arrive as Lua numbers, null fields as nil, empty lists as empty tables."""
    script = tmp_path / "health.lua"
    script.write_text(
        "local hs = {status = 'Healthy'}\n"
        "hs.message = string.format('%d', obj.metadata.generation)\n"
        "return hs\n"
    )
    obj = {"metadata": {"name": "x", "generation": 3}}
    proc = run_engine("eval", str(script), stdin=json.dumps(obj))
    assert proc.returncode == 1 and "string" in proc.stderr
    assert evaluate(script, obj, open_libs=True) == {"status": "Healthy", "message": "3"}
    script.write_text(
        "local n = 0\n"
        "for _ in ipairs(obj.status.conditions) do n = n + 1 end\n"
        "local kinds = type(obj.metadata.generation) .. ' ' .. type(obj.status.phase)\n"
        "local absent = os.execute == nil and os.getenv == nil and type(os.time()) == 'number'\n"
        "return {status = 'Progressing', message = kinds .. ' ' .. n .. ' ' .. tostring(absent)}\n"
    )
    obj = {"metadata": {"generation": 3}, "status": {"phase": None, "conditions": []}}
    assert evaluate(script, obj) == {"status": "Progressing", "message": "number nil 0 true"}
    # A status Argo CD does not know becomes Unknown, as in Argo CD.
    script.write_text("return {status = 'Fine', message = 'x'}\n")
    assert evaluate(script, obj) == {
        "status": "Unknown",
        "message": "Lua returned an invalid health status",
    }


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_every_phase_of_the_crd_maps_to_a_health(kind: Path) -> None:
    """A phase added to the CRD without a thought for Argo CD shows up here."""
    crd_file = kind.name.lower() + "s"
    crd = yaml.safe_load((REPO / "crds" / f"mongobench.io_{crd_file}.yaml").read_text())
    status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    phases = status["properties"]["phase"]["enum"]
    seen = set()
    for phase in phases:
        obj = {"metadata": {"name": "x", "generation": 1}, "status": {"phase": phase}}
        got = evaluate(kind / "health.lua", obj)
        assert got["status"] in STATUSES - {"Missing", "Unknown"}, phase
        seen.add(got["status"])
    assert "Healthy" in seen and "Degraded" in seen and "Progressing" in seen
