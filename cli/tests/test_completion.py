"""Unit tier (local processes only): shell completion. bash really runs the script that
`mongobench completion bash` prints and completes through the installed `mongobench`; zsh and
fish (not installed here) are proven through the callback their scripts make."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from localplane.tools import binary

pytestmark = pytest.mark.unit
BIN = Path(sys.executable).parent
MONGOBENCH = BIN / "mongobench"
ENV = {"PATH": f"{BIN}{os.pathsep}/usr/bin:/bin", "KUBECONFIG": "/nonexistent/kubeconfig"}


def script(shell: str) -> str:
    result = subprocess.run(
        [str(MONGOBENCH), "completion", shell],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=ENV,
    )
    return result.stdout


def bash_complete(*words: str) -> list[str]:
    """What bash offers for the command line `words` (the last one being completed)."""
    program = (
        script("bash")
        + "\nCOMP_WORDS=("
        + " ".join(f"'{w}'" for w in words)
        + f")\nCOMP_CWORD={len(words) - 1}\n"
        + "_mongobench_completion mongobench\n"
        + 'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    result = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=ENV,
    )
    return result.stdout.split()


def test_bash_completes_subcommands_and_options() -> None:
    assert bash_complete("mongobench", "comp") == ["compare", "completion"]
    assert bash_complete("mongobench", "des") == ["describe"]
    assert "--selector" in bash_complete("mongobench", "list", "--s")
    assert bash_complete("mongobench", "completion", "") == ["bash", "zsh", "fish"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_call_back_the_cli(shell: str) -> None:
    text = script(shell)
    assert "_MONGOBENCH_COMPLETE=complete_" + shell in text and "mongobench" in text
    # The callback the script makes, as the shell would run it.
    extra = {"_TYPER_COMPLETE_FISH_ACTION": "get-args"} if shell == "fish" else {}
    result = subprocess.run(
        [str(MONGOBENCH)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={
            **ENV,
            **extra,
            "_MONGOBENCH_COMPLETE": f"complete_{shell}",
            "_TYPER_COMPLETE_ARGS": "mongobench comp",
        },
    )
    assert result.returncode == 0, result.stderr
    assert "compare" in result.stdout and "completion" in result.stdout
    assert "describe" not in result.stdout


def test_an_unknown_shell_is_refused() -> None:
    result = subprocess.run(
        [str(MONGOBENCH), "completion", "tcsh"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=ENV,
    )
    assert result.returncode == 2 and "tcsh" in result.stderr


@pytest.mark.cluster
def test_kubectl_completes_kubectl_mongobench_through_the_completion_plugin() -> None:
    """Cluster tier for its tool: the real kubectl (v1.32.2, from the plane's build) finds
    `kubectl_complete-mongobench` beside `kubectl-mongobench` on PATH, as after pip install."""
    result = subprocess.run(
        [str(binary("kubectl")), "__complete", "mongobench", "comp"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**ENV, "KUBECONFIG": "/nonexistent"},
    )
    assert result.stdout.splitlines() == ["compare", "completion", ":4"], result.stderr
