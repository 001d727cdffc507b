"""Unit tier: what the operator image installs, read from the lock its Dockerfile installs from.

The image runs `uv export --package mongobench` over uv.lock (hack/image/install-python.sh): the
locked dependency closure of the `mongobench` distribution. It must hold no user CLI, no
plotting or terminal package, no `kubernetes` client (kopf would import it: ~38 MiB resident)
and no numpy/scipy outside an optional extra (the results library computes its statistics
without them).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

LOCK = Path(__file__).resolve().parents[3] / "uv.lock"
FORBIDDEN = frozenset(
    {
        "mongobench-cli",
        "mongobench-runner",
        "kubernetes",
        "matplotlib",
        "typer",
        "rich",
        "numpy",
        "scipy",
    }
)


def _packages() -> dict[str, Mapping[str, Any]]:
    lock = tomllib.loads(LOCK.read_text(encoding="utf-8"))
    return {p["name"]: p for p in lock["package"]}


def closure(name: str) -> set[str]:
    """Every package `name` installs: its locked dependencies, transitively, whatever their
    markers (a platform-specific dependency is still in some image); optional extras are not
    followed, as `uv export` without --extra does not."""
    packages = _packages()
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        todo.extend(d["name"] for d in packages[current].get("dependencies", ()))
    return seen


def test_the_operator_image_holds_no_cli_plotting_kubernetes_or_numeric_package() -> None:
    installed = closure("mongobench")
    assert not installed & FORBIDDEN, sorted(installed & FORBIDDEN)
    # The results library (the runner's and the CLI's too) stays as light.
    assert closure("mongobench-results") == {
        "mongobench-results",
        "hdrhistogram",
        "pbr",
        "setuptools",
    }
    # What it does need is there: the check reads the real closure.
    assert {"kopf", "pymongo", "mongobench-results", "mongobench-archive", "hdrhistogram"} <= (
        installed
    )


def test_the_check_sees_forbidden_packages_where_they_are() -> None:
    """Not vacuous: the CLI's closure holds what the operator's must not."""
    assert {"typer", "rich"} <= closure("mongobench-cli")
    # kubernetes and numpy come with the CLI's extras [cluster] and [report] (not followed).
    extras = _packages()["mongobench-cli"]["optional-dependencies"]
    assert [d["name"] for d in extras["cluster"]] == ["kubernetes"]
    assert [d["name"] for d in extras["report"]] == ["matplotlib"]
    assert "numpy" in closure("matplotlib")
    assert "mongobench-runner" in closure("mongobench-workspace")
