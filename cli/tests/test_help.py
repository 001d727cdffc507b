"""Unit tier: the commands' `--help` as a user reads it, against golden files. The options the
commands share are declared once (app.py); how they are declared must not change what a user
reads. Regenerate a golden file only for a change of the help itself:
MONGOBENCH_UPDATE_GOLDEN=1 pytest cli/tests/test_help.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mongobench_cli import options
from mongobench_cli.app import Comparing, Verdict, app

pytestmark = pytest.mark.unit

GOLDEN = Path(__file__).parent / "golden"
COMMANDS = ["list", "describe", "compare", "report", "calibrate", "export", "rerun", "history"]
# A fixed width and no colour: the same text on every terminal and in CI.
ENV = {"COLUMNS": "100", "TERMINAL_WIDTH": "100", "NO_COLOR": "1", "TERM": "dumb"}


def help_text(command: str) -> str:
    result = CliRunner().invoke(app, [command, "--help"], env=ENV, prog_name="mongobench")
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


@pytest.mark.parametrize("command", COMMANDS)
def test_help_is_what_the_user_read_before(command: str) -> None:
    path = GOLDEN / f"help-{command}.txt"
    text = help_text(command)
    if os.environ.get("MONGOBENCH_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def test_an_option_declared_twice_in_one_command_is_refused() -> None:
    def both(*, how: Comparing, verdict: Verdict) -> None:  # --test and --alpha twice
        del how, verdict

    with pytest.raises(TypeError, match="options declared twice: alpha, test"):
        options.groups(both)
