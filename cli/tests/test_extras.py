"""Unit tier: `pip install mongobench-cli` installs the core (archives: list, describe, compare,
export); the Kubernetes client, matplotlib and Otava come with the extras [cluster], [report]
and [history]. Without its extra, a command fails in one line naming it, before reading a run,
and the commands that do not need an extra work without it. Here the package's import is made
to fail in this process; cli/tests/test_packaging.py installs the real wheels with pip."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_history_cli import archive_runs
from typer.testing import CliRunner

import mongobench_cli
from mongobench_archive import open_root
from mongobench_cli.app import app

pytestmark = pytest.mark.unit


def without(monkeypatch: pytest.MonkeyPatch, package: str) -> None:
    """As pip leaves it without the extra: the package's import fails, and the CLI's report
    module (which imports matplotlib) is not loaded yet."""
    monkeypatch.setitem(sys.modules, package, None)
    monkeypatch.delitem(sys.modules, "mongobench_cli.report", raising=False)
    monkeypatch.delattr(mongobench_cli, "report", raising=False)


def fails_naming(extra: str, *args: str) -> None:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})
    assert result.exit_code == 2, result.output
    assert f"pip install 'mongobench-cli[{extra}]'" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_live_commands_without_the_cluster_extra_say_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    without(monkeypatch, "kubernetes")
    kubeconfig = tmp_path / "kubeconfig"  # never read: the missing client is said first
    fails_naming("cluster", "list", "--kubeconfig", str(kubeconfig))
    fails_naming("cluster", "describe", "run-1", "--kubeconfig", str(kubeconfig))


def test_archives_need_no_kubernetes_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive_runs(open_root(str(tmp_path)), 0, 3)
    without(monkeypatch, "kubernetes")
    result = CliRunner().invoke(app, ["list", str(tmp_path)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "weekly-002" in result.output


def test_report_without_the_report_extra_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    without(monkeypatch, "matplotlib")
    fails_naming("report", "report", str(tmp_path), "-o", str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_history_without_the_history_extra_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Otava (its numpy/scipy pins and importers) comes with [history] only."""
    without(monkeypatch, "otava.analysis")
    fails_naming("history", "history", str(tmp_path))


def test_history_needs_no_plotting_package_unless_asked_for_its_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[history]` without `[report]`: the table works; `--report` fails naming the extra that
    draws, before reading the archive."""
    archive_runs(open_root(str(tmp_path)), 0, 60)
    without(monkeypatch, "matplotlib")
    result = CliRunner().invoke(app, ["history", str(tmp_path), "--read-only", "-o", "json"])
    assert result.exit_code == 0, result.output
    [change] = json.loads(result.output)["changes"]
    assert change["regression"] is True
    fails_naming("report", "history", str(tmp_path), "--report", str(tmp_path / "report"))
    assert not (tmp_path / "report").exists()
