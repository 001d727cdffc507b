"""Unit tier: the Argo CD health checks (manifests/gitops/argocd/resource_customizations) run by
the real Argo CD (`argocd admin settings resource-overrides health`, hack/versions.env
ARGOCD_VERSION) from `argocd-cm-health.yaml`, the ConfigMap users merge into their `argocd-cm`:
every case of their health_test.yaml (Argo CD's own resource_customizations layout and format)
gets exactly its expected status and message.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from localplane.argocd import HEALTH_CM, INSTALL_HEALTH, not_built, parse_health, resource_health
from localplane.tools import REPO

pytestmark = pytest.mark.unit

ROOT = REPO / "manifests" / "gitops" / "argocd" / "resource_customizations"
KINDS = sorted(p.parent for p in ROOT.glob("*/*/health.lua"))
# What Argo CD accepts from a health script.
STATUSES = {"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}


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
    keys = yaml.safe_load(HEALTH_CM.read_text())["data"]
    assert sorted(keys) == [f"resource.customizations.health.mongobench.io_{k.name}" for k in KINDS]


def test_the_install_page_merges_the_health_checks_as_the_cluster_test_does() -> None:
    """docs/install.md's command is the one localplane.argocd.install runs (test_argocd.py)."""
    page = (REPO / "docs" / "install.md").read_text()
    assert f"\n{INSTALL_HEALTH}\n" in page


@pytest.fixture(scope="module")
def argocd_built() -> None:
    """The tests below run the real Argo CD: where `make setup-gitops` has not built it, they
    skip, saying so (localplane.argocd.not_built)."""
    if reason := not_built():
        pytest.skip(reason)


@pytest.fixture(scope="module")
def assessed(argocd_built: None) -> dict[Path, dict[str, str]]:
    """Argo CD's health of every case's input, by input path (one CLI process per object, a few
    at once: each one takes about a second to start)."""
    inputs = sorted(ROOT.glob("*/*/testdata/*.yaml"))
    with ThreadPoolExecutor(4) as pool:
        healths = pool.map(lambda p: resource_health(yaml.safe_load(p.read_text())), inputs)
        return dict(zip(inputs, healths, strict=True))


@pytest.mark.parametrize(("kind", "case"), cases())
def test_health(assessed: dict[Path, dict[str, str]], kind: Path, case: dict[str, Any]) -> None:
    assert assessed[kind / case["inputPath"]] == case["healthStatus"]
    assert case["healthStatus"]["status"] in STATUSES


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_every_phase_of_the_crd_maps_to_a_health(kind: Path, argocd_built: None) -> None:
    """A phase added to the CRD without a thought for Argo CD shows up here."""
    crd_file = kind.name.lower() + "s"
    crd = yaml.safe_load((REPO / "crds" / f"mongobench.io_{crd_file}.yaml").read_text())
    status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    phases = status["properties"]["phase"]["enum"]
    objs = [
        {
            "apiVersion": "mongobench.io/v1alpha1",
            "kind": kind.name,
            "metadata": {"name": "x", "generation": 1},
            "status": {"phase": phase},
        }
        for phase in phases
    ]
    with ThreadPoolExecutor(4) as pool:
        got = dict(zip(phases, pool.map(resource_health, objs), strict=True))
    for phase, health in got.items():
        assert health["status"] in STATUSES - {"Missing", "Unknown"}, (phase, health)
    assert {"Healthy", "Degraded", "Progressing"} <= {h["status"] for h in got.values()}


def test_an_object_without_a_check_is_an_error_not_a_health(argocd_built: None) -> None:
    """Argo CD answers a kind the ConfigMap has no check for with a sentence, not a status: a
    case whose kind lost its check fails instead of passing on a default."""
    obj = {"apiVersion": "mongobench.io/v1alpha1", "kind": "Other", "metadata": {"name": "x"}}
    with pytest.raises(
        ValueError, match=r"Health script is not configured for 'mongobench\.io/Other'"
    ):
        resource_health(obj)
    assert parse_health("STATUS: Degraded\nMESSAGE: Failed: x\n") == {
        "status": "Degraded",
        "message": "Failed: x",
    }
