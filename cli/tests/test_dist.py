"""The CLI's packages as PyPI gets them (cli/release.sh wheels, `make cli-dist`).

Unit tier: the packages' metadata. One version; the three published packages pin each other
exactly (released together from one tag, they call each other's internals) and every
third-party dependency as a range (exact pins stay in uv.lock and the images), so the CLI installs
beside other packages; a readme, classifiers and the docs site for the PyPI page; the license
and homepage everywhere, no upper Python bound. The packaging tier (cli/tests/test_packaging.py)
installs the built wheels with pip, resolving from the package index.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ["operator", "bench-jobs/runner", "archive", "results", "cli"]
PUBLISHED = ["mongobench-results", "mongobench-archive", "mongobench-cli"]


def project(folder: str) -> dict[str, object]:
    return dict(tomllib.loads((REPO / folder / "pyproject.toml").read_text())["project"])


@pytest.mark.unit
@pytest.mark.parametrize("folder", PACKAGES)
def test_every_package_names_its_license_and_homepage(folder: str) -> None:
    meta = project(folder)
    assert meta["license"] == "Apache-2.0" and meta["license-files"] == ["LICENSE"]
    # The wheel carries the license text: a copy of the repository's, kept identical.
    assert (REPO / folder / "LICENSE").read_bytes() == (REPO / "LICENSE").read_bytes()
    assert b"Apache License" in (REPO / "LICENSE").read_bytes()[:200]
    urls = meta["urls"]
    assert isinstance(urls, dict) and urls["Homepage"].startswith("https://github.com/")
    # The code needs 3.11 (StrEnum, tomllib); nothing bounds it above (3.12 and 3.13 checked).
    assert meta["requires-python"] == ">=3.11"


@pytest.mark.unit
def test_published_packages_share_one_version_and_pin_each_other_exactly() -> None:
    versions = {project(f)["name"]: project(f)["version"] for f in PACKAGES}
    assert len(set(versions.values())) == 1, versions
    version = versions["mongobench-cli"]
    for folder in PACKAGES:
        for dep in project(folder).get("dependencies", []):  # type: ignore[attr-defined]
            if str(dep).startswith("mongobench-"):
                assert dep.endswith(f"=={version}"), (folder, dep)
    chart = (REPO / "charts" / "mongobench" / "Chart.yaml").read_text()
    assert f'appVersion: "{version}"' in chart  # the release tag is v<appVersion>


@pytest.mark.unit
@pytest.mark.parametrize("folder", ["results", "archive", "cli"])
def test_published_packages_declare_ranges_and_a_page_for_pypi(folder: str) -> None:
    meta = project(folder)
    extras = meta.get("optional-dependencies", {})
    assert isinstance(extras, dict)
    listed = [*meta["dependencies"]]  # type: ignore[misc]
    for group in extras.values():
        listed += group
    deps = [Requirement(d) for d in listed if not d.startswith(f"{meta['name']}[")]  # [all]
    assert deps
    for dep in deps:
        if dep.name.startswith("mongobench-"):
            assert str(dep.specifier) == f"=={meta['version']}", dep
        else:  # a lower bound, never one version (the lock pins; the package lets others in)
            assert any(s.operator == ">=" for s in dep.specifier), dep
            assert not any(s.operator in ("==", "===", "~=") for s in dep.specifier), dep
    assert meta["readme"] == "README.md" and (REPO / folder / "README.md").is_file()
    classifiers = meta["classifiers"]
    assert isinstance(classifiers, list)
    assert "Programming Language :: Python :: 3.11" in classifiers  # hatchling checks spelling
    urls = meta["urls"]
    assert isinstance(urls, dict)
    assert urls["Documentation"] == "https://mongobench.github.io/mongobench/"


@pytest.mark.unit
def test_the_cli_core_leaves_the_kubernetes_client_plotting_and_numerics_to_extras() -> None:
    meta = project("cli")
    core = {Requirement(d).name for d in meta["dependencies"]}  # type: ignore[attr-defined]
    assert not core & {"kubernetes", "matplotlib", "numpy", "scipy", "apache-otava"}, core
    extras = meta["optional-dependencies"]
    assert isinstance(extras, dict)
    assert set(extras) == {"cluster", "report", "history", "all"}
    assert extras["all"] == ["mongobench-cli[cluster,report,history]"]
    # What the commands' one-line errors name is what the extras hold.
    app = (REPO / "cli" / "mongobench_cli" / "app.py").read_text()
    sources = (REPO / "cli" / "mongobench_cli" / "sources.py").read_text()
    assert 'require_extra("matplotlib", "report"' in app and "matplotlib>=3.9" in extras["report"]
    assert 'require_extra("kubernetes", "cluster"' in sources
    assert extras["cluster"] == ["kubernetes>=30"]
