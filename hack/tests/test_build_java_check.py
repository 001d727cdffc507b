"""Unit tier: `hack/build-java.sh check`, the guard the test tiers run before starting YCSB
(localplane.tools.binding_problem): a checkout pulled without `make setup` is told so at once
instead of running an old jar against the runner's new properties.

The script is run as it is, on a copy of the binding's layout (a pom, a source, the built lib
folder and the stamp a build writes); no Maven is needed for the check.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from localplane.tools import REPO

pytestmark = pytest.mark.unit


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    (tmp_path / "hack").mkdir()
    shutil.copy(REPO / "hack" / "build-java.sh", tmp_path / "hack" / "build-java.sh")
    proj = tmp_path / "bench-jobs" / "ycsb-binding"
    (proj / "src" / "main" / "java").mkdir(parents=True)
    (proj / "pom.xml").write_text("<project/>\n")
    (proj / "src" / "main" / "java" / "Gate.java").write_text("class Gate {}\n")
    (proj / "target" / "ycsb" / "lib").mkdir(parents=True)
    return tmp_path


def check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(root / "hack" / "build-java.sh"), "check"],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin"},  # no Maven on it: the check needs none
    )


def stamp(root: Path) -> None:
    """What a build writes: the hash of the sources it built (build-java.sh's source_hash)."""
    proj = root / "bench-jobs" / "ycsb-binding"
    digest = subprocess.run(
        "(find pom.xml src/main -type f -print0 | sort -z | xargs -0 sha256sum) "
        "| sha256sum | cut -d' ' -f1",
        shell=True,
        cwd=proj,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (proj / "target" / ".build-stamp").write_text(digest)


def test_a_jar_built_from_the_sources_as_they_are_passes(checkout: Path) -> None:
    stamp(checkout)
    done = check(checkout)
    assert (done.returncode, done.stderr) == (0, "")


def test_a_source_changed_since_the_build_is_refused_with_what_to_run(checkout: Path) -> None:
    stamp(checkout)
    source = checkout / "bench-jobs" / "ycsb-binding" / "src" / "main" / "java" / "Gate.java"
    source.write_text("class Gate { static void writeAtomically() {} }\n")
    done = check(checkout)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "build-java: the YCSB binding jar is older than its sources: run make setup"
    )


def test_a_binding_never_built_is_refused(checkout: Path) -> None:
    shutil.rmtree(checkout / "bench-jobs" / "ycsb-binding" / "target")
    done = check(checkout)
    assert done.returncode == 1
    assert "the YCSB binding is not built: run make setup" in done.stderr
