"""Unit tier: the charts' Artifact Hub metadata (`artifacthub.io/*` annotations in Chart.yaml,
charts/artifacthub-repo.yml) parses, and says what the charts really hold: the images are those
values.yaml runs at the chart's appVersion, the CRDs those of crds/, the CRD examples are the
repository's samples and valid against the CRDs (kubeconform -strict)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from localplane.schemas import REPO_CRDS, load_crds, validate
from localplane.tools import REPO

pytestmark = pytest.mark.unit

CHARTS = ["mongobench", "mongobench-crds"]
# https://artifacthub.io/docs/topics/annotations/helm/
KNOWN = {
    "changes",
    "containsSecurityUpdates",
    "crds",
    "crdsExamples",
    "images",
    "license",
    "links",
    "maintainers",
    "operator",
    "operatorCapabilities",
    "prerelease",
    "recommendations",
    "screenshots",
    "signKey",
}
CAPABILITIES = {
    "Basic Install",
    "Seamless Upgrades",
    "Full Lifecycle",
    "Deep Insights",
    "Auto Pilot",
}


def chart(name: str) -> dict[str, Any]:
    meta: dict[str, Any] = yaml.safe_load((REPO / "charts" / name / "Chart.yaml").read_text())
    return meta


def annotations(name: str) -> dict[str, str]:
    found: dict[str, str] = chart(name)["annotations"]
    return found


@pytest.mark.parametrize("name", CHARTS)
def test_annotations_are_artifact_hubs_and_parse(name: str) -> None:
    notes = annotations(name)
    keys = {k.removeprefix("artifacthub.io/") for k in notes}
    assert all(k.startswith("artifacthub.io/") for k in notes)
    assert keys <= KNOWN, keys - KNOWN
    for key, value in notes.items():
        assert isinstance(value, str), key  # Helm wants strings; lists are YAML inside them
        yaml.safe_load(value)
    assert notes["artifacthub.io/license"] == "Apache-2.0"
    assert notes["artifacthub.io/prerelease"] == "true"  # v1alpha1, 0.x
    # The release writes the changes from CHANGELOG.md (hack/release.py), never by hand.
    assert "artifacthub.io/changes" not in notes
    links = yaml.safe_load(notes["artifacthub.io/links"])
    assert {link["name"] for link in links} == {"Source", "Documentation", "Changelog"}


def test_the_operator_charts_images_are_what_its_values_run() -> None:
    meta = chart("mongobench")
    values = yaml.safe_load((REPO / "charts" / "mongobench" / "values.yaml").read_text())
    images = yaml.safe_load(meta["annotations"]["artifacthub.io/images"])
    # Tags empty in values: the chart runs its appVersion.
    run = {
        "operator": values["image"],
        "ycsb": values["benchImages"]["ycsb"],
        "locust": values["benchImages"]["locust"],
    }
    assert all(v["tag"] == "" and v["digest"] == "" for v in run.values())
    expected = {n: f"{v['repository']}:{meta['appVersion']}" for n, v in run.items()}
    assert {i["name"]: i["image"] for i in images} == expected
    assert meta["annotations"]["artifacthub.io/operator"] == "true"
    assert meta["annotations"]["artifacthub.io/operatorCapabilities"] in CAPABILITIES
    # The CRD chart runs no image.
    assert "artifacthub.io/images" not in annotations("mongobench-crds")


@pytest.fixture(scope="module")
def crds() -> list[dict[str, Any]]:
    return [c for c in load_crds(REPO_CRDS) if c["spec"]["group"] == "mongobench.io"]


@pytest.mark.parametrize("name", CHARTS)
def test_crds_named_are_the_repositorys(name: str, crds: list[dict[str, Any]]) -> None:
    listed = yaml.safe_load(annotations(name)["artifacthub.io/crds"])
    expected = {
        (
            c["spec"]["names"]["kind"],
            next(v["name"] for v in c["spec"]["versions"] if v["storage"]),
            c["metadata"]["name"],
        )
        for c in crds
    }
    assert {(c["kind"], c["version"], c["name"]) for c in listed} == expected
    assert all(c["displayName"] and c["description"] for c in listed)
    # Both charts show the same CRDs (the operator's page is where users look for them).
    assert (
        annotations(name)["artifacthub.io/crds"] == annotations("mongobench")["artifacthub.io/crds"]
    )


@pytest.mark.parametrize("name", CHARTS)
def test_crd_examples_are_valid_samples_of_every_kind(
    name: str, crds: list[dict[str, Any]]
) -> None:
    examples = yaml.safe_load(annotations(name)["artifacthub.io/crdsExamples"])
    samples = [
        yaml.safe_load(p.read_text())
        for p in sorted((REPO / "manifests" / "samples").glob("*.yaml"))
    ]
    for example in examples:
        assert example in samples, example["metadata"]["name"]  # a sample, kept the same
    assert {e["kind"] for e in examples} == {c["spec"]["names"]["kind"] for c in crds}
    assert validate(yaml.safe_dump_all(examples), crds) == []


def test_artifacthub_repo_metadata_has_only_known_fields() -> None:
    meta = yaml.safe_load((REPO / "charts" / "artifacthub-repo.yml").read_text())
    assert set(meta) <= {"repositoryID", "owners", "ignore"}
    for owner in meta.get("owners") or []:
        assert set(owner) == {"name", "email"}


def test_release_pushes_the_repo_metadata_to_each_charts_repository() -> None:
    workflow = (Path(REPO) / ".github" / "workflows" / "release.yaml").read_text()
    assert '"$REGISTRY/charts/$chart:artifacthub.io"' in workflow
    assert (
        "artifacthub-repo.yml:application/vnd.cncf.artifacthub.repository-metadata.layer.v1.yaml"
        in workflow
    )
