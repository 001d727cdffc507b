"""The code before a change, for benchmarks that print it side by side with this tree: the
operator's sources at a git ref, run from the same virtualenv (its folders first on PYTHONPATH)."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

from localplane.tools import REPO

# The folders whose code the operator process runs (the rest of the virtualenv is shared).
SOURCES = ("operator", "results", "archive")


def export_tree(ref: str, into: Path) -> Path:
    """The operator's sources at `ref`, extracted into `into` (git archive: no worktree)."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", ref, *SOURCES],
        capture_output=True,
        check=True,
    ).stdout
    into.mkdir(parents=True, exist_ok=True)
    tar = into / "tree.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as t:
        t.extractall(into, filter="data")
    return into


def pythonpath(tree: Path) -> str:
    return os.pathsep.join(str(tree / folder) for folder in SOURCES)
