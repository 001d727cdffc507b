"""Unit tier: what the release workflow promises, read from .github/workflows/release.yaml as
GitHub reads it (actionlint, in `make lint`, checks the syntax; these check the intent).

- No job that can publish (registry writes, an OIDC token, repository writes) starts unless
  `make test` and the kind e2e passed: both are among its transitive `needs`.
- The OIDC token (cosign keyless, PyPI trusted publishing) only where it is used.
- Every action pinned by a full commit SHA, the tag named in a comment.
- The images built are those of hack/images.sh, from Dockerfiles carrying the OCI labels.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"


def workflow(name: str) -> dict[str, Any]:
    # PyYAML reads the key `on` as True (YAML 1.1); GitHub reads it as "on".
    doc: dict[Any, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    doc["on"] = doc.pop(True, doc.get("on"))
    return doc


RELEASE = workflow("release.yaml")
JOBS: dict[str, dict[str, Any]] = RELEASE["jobs"]


def needs(job: str) -> set[str]:
    direct = JOBS[job].get("needs", [])
    direct = [direct] if isinstance(direct, str) else direct
    found = set(direct)
    for parent in direct:
        found |= needs(parent)
    return found


def can_publish(job: dict[str, Any]) -> bool:
    perms = job.get("permissions", {})
    return (
        any(perms.get(p) == "write" for p in ("packages", "id-token", "contents"))
        or "environment" in job
    )


def test_every_publishing_job_waits_for_the_tests_and_the_kind_e2e() -> None:
    publishing = {name for name, job in JOBS.items() if can_publish(job)}
    assert publishing == {"images", "chart", "pypi", "github-release", "krew-index"}
    for name in publishing:
        assert {"test", "e2e-kind"} <= needs(name), name
    # The gates themselves: the README's test command, and e2e-kind.yaml called as it runs alone.
    assert any(step.get("run") == "make test" for step in JOBS["test"]["steps"])
    assert JOBS["e2e-kind"]["uses"] == "./.github/workflows/e2e-kind.yaml"
    assert "workflow_call" in workflow("e2e-kind.yaml")["on"]
    # The Release comes last: every artifact it names is published before it.
    assert {"images", "chart", "pypi", "cli-archives"} <= needs("github-release")
    # The workflow's default grants nothing beyond reading.
    assert RELEASE["permissions"] == {"contents": "read"}


def test_the_oidc_token_only_where_it_signs_or_publishes() -> None:
    with_token = {n for n, j in JOBS.items() if j.get("permissions", {}).get("id-token")}
    assert with_token == {"images", "chart", "pypi"}
    for name in ("images", "chart"):
        runs = " ".join(s.get("run", "") for s in JOBS[name]["steps"])
        assert "cosign sign --yes" in runs
        assert "@$DIGEST" in runs or "@$digest" in runs  # by digest, never by tag


@pytest.mark.parametrize("path", sorted(WORKFLOWS.glob("*.yaml")), ids=lambda p: p.name)
def test_actions_are_pinned_by_commit_with_the_tag_named(path: Path) -> None:
    uses = re.findall(r"uses: *([^\s#]+)(.*)", path.read_text())
    assert uses
    for ref, comment in uses:
        if ref.startswith("./"):
            continue
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ref), ref
        assert re.fullmatch(r" +# v\d+(\.\d+)*", comment), (ref, comment)


def test_images_are_signed_with_sbom_and_provenance() -> None:
    steps = JOBS["images"]["steps"]
    build = next(s for s in steps if s.get("id") == "build")["with"]
    assert build["sbom"] is True and build["provenance"] == "mode=max" and build["push"] is True
    installer = next(s for s in steps if "cosign-installer" in s.get("uses", ""))
    assert re.fullmatch(r"v\d+\.\d+\.\d+", installer["with"]["cosign-release"])  # cosign pinned
    sign = next(s for s in steps if "cosign sign" in s.get("run", ""))
    assert sign["env"]["DIGEST"] == "${{ steps.build.outputs.digest }}"


def dockerfile_labels(path: Path) -> dict[str, str]:
    """The LABELs of the final stage (continuation lines joined)."""
    final = path.read_text().replace("\\\n", " ").rsplit("\nFROM ", 1)[1]
    labels: dict[str, str] = {}
    for line in final.splitlines():
        if line.startswith("LABEL "):
            labels |= dict(re.findall(r'(\S+?)="([^"]*)"', line))
    return labels


def test_three_images_with_the_oci_labels_from_build_args() -> None:
    matrix = JOBS["images"]["strategy"]["matrix"]["include"]
    script = (REPO / "hack" / "images.sh").read_text()
    listed = re.findall(r'^  "([\w-]+) (\S+)(?: [^"]*)?"$', script, re.MULTILINE)
    assert sorted((m["image"], m["file"]) for m in matrix) == sorted(listed)
    build = next(s for s in JOBS["images"]["steps"] if s.get("id") == "build")["with"]
    build_args, annotations = build["build-args"], build["annotations"]
    # What the build passes for every entry (the operator's Dockerfile names itself from them).
    assert "TITLE=mongobench-${{ matrix.image }}" in build_args
    assert "DESCRIPTION=${{ matrix.description }}" in build_args
    for entry in matrix:
        passed = {
            "${TITLE}": f"mongobench-{entry['image']}",
            "${DESCRIPTION}": entry["description"],
        }
        labels = {k: passed.get(v, v) for k, v in dockerfile_labels(REPO / entry["file"]).items()}
        assert labels == {
            "org.opencontainers.image.title": f"mongobench-{entry['image']}",
            "org.opencontainers.image.description": entry["description"],
            "org.opencontainers.image.version": "${VERSION}",
            "org.opencontainers.image.revision": "${REVISION}",
            "org.opencontainers.image.source": "${SOURCE}",
            "org.opencontainers.image.licenses": "Apache-2.0",
        }, entry["file"]
        for arg in ("VERSION", "REVISION", "SOURCE"):
            assert re.search(rf"^{arg}=\$\{{\{{", build_args, re.MULTILINE), arg
            assert f'--build-arg "{arg}=' in script, arg
    for key in labels:
        assert f"index:{key}=" in annotations, key


def test_the_release_completes_when_one_platforms_archive_fails() -> None:
    """Every runner label exists (macos-13 was retired in December 2025 and its job never
    started); one archive failing neither cancels the others nor holds the Release back, which
    waits for what is published and takes the archives that built."""
    archives = JOBS["cli-archives"]
    assert archives["strategy"]["fail-fast"] is False
    runners = {e["platform"]: e["runner"] for e in archives["strategy"]["matrix"]["include"]}
    assert runners == {
        "linux_amd64": "ubuntu-24.04",
        "linux_arm64": "ubuntu-24.04-arm",
        "darwin_amd64": "macos-15-intel",
        "darwin_arm64": "macos-14",
        "windows_amd64": "windows-2022",
    }
    release = JOBS["github-release"]
    condition = " ".join(release["if"].split())
    assert condition.startswith("always() && ")
    for job in ("images", "chart", "pypi", "cli-wheels"):
        assert f"needs.{job}.result == 'success'" in condition, job
    assert "cli-archives" not in condition
    script = " ".join(s.get("run", "") for s in release["steps"])
    assert "cli/release.sh missing" in script and "gh release upload" in script
    assert JOBS["krew-index"]["if"] == "always() && needs.github-release.result == 'success'"


def test_linux_archives_are_built_on_the_glibc_the_krew_manifest_names() -> None:
    """PyInstaller's executable needs the build host's glibc or newer: the Linux archives are
    built in a manylinux_2_28 container (glibc 2.28), pinned by its dated tag, and the manifest's
    description says 2.28."""
    include = JOBS["cli-archives"]["strategy"]["matrix"]["include"]
    for entry in include:
        if entry["platform"].startswith("linux"):
            image, tag = entry["container"].split(":")
            assert image.startswith("quay.io/pypa/manylinux_2_28_"), entry
            assert re.fullmatch(r"\d{4}\.\d{2}\.\d{2}-\d+", tag), entry
        else:
            assert "container" not in entry
    assert JOBS["cli-archives"]["container"] == "${{ matrix.container }}"
    krew_py = (REPO / "cli" / "krew" / "krew.py").read_text()
    assert "Linux: glibc 2.28 or newer" in krew_py


def test_pull_requests_run_lint_and_the_unit_tier() -> None:
    ci = workflow("ci.yaml")
    assert "pull_request" in ci["on"]
    runs = [s.get("run", "") for job in ci["jobs"].values() for s in job["steps"]]
    assert "make lint" in runs and "make test-unit" in runs
    assert ci["permissions"] == {"contents": "read"}


def test_dependabot_proposes_every_kind_of_pin() -> None:
    config = yaml.safe_load((REPO / ".github" / "dependabot.yml").read_text())
    updates = {u["package-ecosystem"]: u for u in config["updates"]}
    assert set(updates) == {"uv", "pip", "docker", "gomod", "maven", "github-actions"}
    # Each folder named holds what its ecosystem reads.
    markers = {
        "uv": "uv.lock",
        "pip": "uv-requirements.txt",
        "docker": "Dockerfile*",
        "gomod": "go.mod",
        "maven": "pom.xml",
        "github-actions": ".github/workflows/*.yaml",
    }
    for ecosystem, update in updates.items():
        for folder in update.get("directories") or [update["directory"]]:
            assert list((REPO / folder.lstrip("/")).glob(markers[ecosystem])), (ecosystem, folder)
