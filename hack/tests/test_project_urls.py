"""Unit tier: the project's public home is named once (hack/project.env) and every file that
must spell it out (pyproject.toml, Chart.yaml, values.yaml, Dockerfiles, READMEs, Argo CD
Applications, the operator's image defaults) says the same: changing the home is one edit and
this test names every file still saying the old one."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


def project_env() -> dict[str, str]:
    lines = (REPO / "hack" / "project.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


ENV = project_env()
URL, REGISTRY = ENV["PROJECT_URL"], ENV["IMAGE_REGISTRY"]


def tracked_text_files() -> list[Path]:
    names = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    files = []
    for name in names:
        path = REPO / name
        if name == "uv.lock" or not path.is_file() or path.stat().st_size > 2_000_000:
            continue
        try:
            path.read_text()
        except UnicodeDecodeError:
            continue
        files.append(path)
    return files


def test_every_mention_of_the_repository_and_the_registry_is_the_one_named() -> None:
    repository = re.compile(r"https://github\.com/[\w.-]+/mongobench(?=[/#.\s\"')]|$)")
    registry = re.compile(r"ghcr\.io/(?!prometheus-community/)[\w.-]+(?=/)")
    wrong = []
    for path in tracked_text_files():
        text = path.read_text()
        rel = path.relative_to(REPO)
        wrong += [f"{rel}: {m}" for m in repository.findall(text) if m != URL]
        wrong += [f"{rel}: {m}" for m in registry.findall(text) if m != REGISTRY]
    assert not wrong, wrong
    # Under the two patterns above: they do find the mentions this test is about.
    readme = (REPO / "README.md").read_text()
    assert repository.search(readme) and registry.search(readme)


@pytest.mark.parametrize("folder", ["operator", "bench-jobs/runner", "archive", "results", "cli"])
def test_packages_name_the_home(folder: str) -> None:
    urls = tomllib.loads((REPO / folder / "pyproject.toml").read_text())["project"]["urls"]
    assert urls["Homepage"] == URL and urls["Source"] == URL
    assert urls["Issues"] == f"{URL}/issues"


@pytest.mark.parametrize("chart", ["mongobench", "mongobench-crds"])
def test_charts_name_the_home(chart: str) -> None:
    meta = yaml.safe_load((REPO / "charts" / chart / "Chart.yaml").read_text())
    assert meta["home"] == URL
    links = yaml.safe_load(meta["annotations"]["artifacthub.io/links"])
    assert {link["name"]: link["url"] for link in links}["Source"] == URL


def test_the_images_default_source_label_is_the_home() -> None:
    for dockerfile in ("Dockerfile", "bench-jobs/Dockerfile.ycsb", "bench-jobs/Dockerfile.locust"):
        assert f"ARG SOURCE={URL}\n" in (REPO / dockerfile).read_text(), dockerfile
