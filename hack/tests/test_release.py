"""Unit tier: hack/release.py, run as the release workflow runs it (`python3 hack/release.py ...`)
on this checkout or a copy of its versioned files: which tags it refuses and why, the GitHub
Release's notes, and the charts as released (Artifact Hub changes from CHANGELOG.md, images
pinned by digest in the annotations and the values), linted and rendered by the real helm."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from localplane.tools import binary

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
VERSIONED = [
    "CHANGELOG.md",
    "charts/mongobench/Chart.yaml",
    "charts/mongobench-crds/Chart.yaml",
    *(
        f"{p}/pyproject.toml"
        for p in ["operator", "bench-jobs/runner", "archive", "results", "cli"]
    ),
]
DIGESTS = {
    name: "sha256:" + f"{i:x}" * 64 for i, name in enumerate(["operator", "ycsb", "locust"], 1)
}


def release(*args: str, repo: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(repo / "hack" / "release.py"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of the files that carry the version, with the script."""
    for name in [*VERSIONED, "hack/release.py"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    return tmp_path


def date_section(repo: Path, version: str = "0.1.0") -> None:
    path = repo / "CHANGELOG.md"
    path.write_text(
        path.read_text().replace(f"## [{version}] - Unreleased", f"## [{version}] - 2027-01-15")
    )


def test_an_undated_changelog_section_stops_the_release() -> None:
    # This checkout as it is: 0.1.0 is not dated yet, so its tag would publish nothing.
    result = release("check", "v0.1.0")
    assert result.returncode != 0
    assert "'## [0.1.0]' has no release date" in result.stderr


def test_the_tag_of_a_dated_version_passes_and_prints_it(checkout: Path) -> None:
    date_section(checkout)
    result = release("check", "v0.1.0", repo=checkout)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "0.1.0\n"


def test_a_tag_that_is_not_the_checkouts_version_names_every_file_that_disagrees(
    checkout: Path,
) -> None:
    date_section(checkout)
    result = release("check", "v0.2.0", repo=checkout)
    assert result.returncode != 0
    for where in ("charts/mongobench appVersion is 0.1.0", "cli/pyproject.toml is 0.1.0"):
        assert where in result.stderr
    assert "is not vX.Y.Z" in release("check", "0.1.0", repo=checkout).stderr


def test_one_package_left_behind_stops_the_release(checkout: Path) -> None:
    date_section(checkout)
    path = checkout / "results" / "pyproject.toml"
    path.write_text(path.read_text().replace('version = "0.1.0"', 'version = "0.0.9"', 1))
    result = release("check", "v0.1.0", repo=checkout)
    assert result.returncode != 0 and "results/pyproject.toml is 0.0.9" in result.stderr


def test_notes_are_the_versions_section_without_the_link_references() -> None:
    result = release("notes", "0.1.0")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("The first release.")
    assert "### Added" in result.stdout and "**`MongoCluster`**" in result.stdout
    assert "## [" not in result.stdout and "releases/tag/v0.1.0" not in result.stdout
    assert "no section '## [9.9.9]'" in release("notes", "9.9.9").stderr


def test_released_charts_carry_the_changelog_and_the_pushed_digests(tmp_path: Path) -> None:
    out = tmp_path / "charts"
    pairs = [f"{n}={d}" for n, d in DIGESTS.items()]
    result = release("chart", "0.1.0", str(out), *pairs)
    assert result.returncode == 0, result.stderr
    changelog = (REPO / "CHANGELOG.md").read_text()
    section = changelog.split("## [0.1.0]", 1)[1].split("\n[0.1.0]:", 1)[0]
    items = re.findall(r"^- ", section, re.MULTILINE)
    for name in ("mongobench", "mongobench-crds"):
        meta = yaml.safe_load((out / name / "Chart.yaml").read_text())
        changes = yaml.safe_load(meta["annotations"]["artifacthub.io/changes"])
        assert len(changes) == len(items) and {c["kind"] for c in changes} == {"added"}
        first = changes[0]["description"]
        assert first.startswith("MongoCluster (mgc, mongobench.io/v1alpha1): a replica set")
        assert "**" not in first and "`" not in first and "\n" not in first
        lint = subprocess.run(
            [str(binary("helm")), "lint", "--strict", str(out / name)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert lint.returncode == 0, lint.stdout + lint.stderr
    images = yaml.safe_load(
        yaml.safe_load((out / "mongobench" / "Chart.yaml").read_text())["annotations"][
            "artifacthub.io/images"
        ]
    )
    assert {i["name"]: i["image"] for i in images} == {
        n: f"ghcr.io/mongobench/{n}:0.1.0@{d}" for n, d in DIGESTS.items()
    }
    # What an install of the released chart runs: the signed digests.
    rendered = subprocess.run(
        [str(binary("helm")), "template", "mb", str(out / "mongobench")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert sorted(set(re.findall(r"ghcr\.io/mongobench/[\w@:]+", rendered))) == sorted(
        f"ghcr.io/mongobench/{n}@{d}" for n, d in DIGESTS.items()
    )
    # The checkout's own charts are left as they were.
    assert "@sha256:" not in (REPO / "charts" / "mongobench" / "Chart.yaml").read_text()
    assert 'digest: "sha' not in (REPO / "charts" / "mongobench" / "values.yaml").read_text()


@pytest.mark.parametrize(
    ("digests", "error"),
    [
        ({"operator": DIGESTS["operator"], "ycsb": DIGESTS["ycsb"]}, "no digest given for image"),
        ({**DIGESTS, "mongo": DIGESTS["ycsb"]}, "digests of images no chart names: ['mongo']"),
        ({**DIGESTS, "ycsb": "sha256:abc"}, "is not a sha256 digest"),
    ],
)
def test_a_chart_is_never_released_half_pinned(
    digests: dict[str, str], error: str, tmp_path: Path
) -> None:
    result = release("chart", "0.1.0", str(tmp_path), *(f"{n}={d}" for n, d in digests.items()))
    assert result.returncode != 0 and error in result.stderr


def test_the_install_pages_history_image_command_runs_the_history_image_of_a_released_chart(
    tmp_path: Path,
) -> None:
    """docs/install.md: a released chart pins the operator by digest, so the page's command
    clears it; the history image then runs by the chart's appVersion. Without the cleared digest
    the history image would be asked for under the plain operator's digest (what the page warns
    of)."""
    out = tmp_path / "charts"
    result = release("chart", "0.1.0", str(out), *[f"{n}={d}" for n, d in DIGESTS.items()])
    assert result.returncode == 0, result.stderr
    page = (REPO / "docs" / "install.md").read_text()
    line = next(ln for ln in page.splitlines() if ln.startswith("helm upgrade") and "history" in ln)
    sets = re.findall(r"--set (\S+)", line.split("#")[0])
    assert sets == ["image.repository=ghcr.io/mongobench/operator-history", "image.digest="]

    def operator_image(*values: str) -> str:
        args = [a for v in values for a in ("--set", v)]
        rendered = subprocess.run(
            [str(binary("helm")), "template", "mb", str(out / "mongobench"), *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        return re.findall(r'image: "?(ghcr\.io/mongobench/operator[^"\s]*)', rendered)[0]

    assert operator_image(*sets) == "ghcr.io/mongobench/operator-history:0.1.0"
    assert operator_image(sets[0]) == f"ghcr.io/mongobench/operator-history@{DIGESTS['operator']}"
