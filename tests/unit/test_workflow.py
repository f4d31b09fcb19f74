"""The GitHub Actions workflows and the action call perfci commands that exist, with options that exist: every
`perfci ...` line in .github/workflows/*.yml and action.yml is parsed by the real CLI (with --help appended, so
nothing runs; an unknown command or option still fails the parse)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.cli import app

ROOT = Path(__file__).parents[2]
WORKFLOWS = [*sorted((ROOT / ".github" / "workflows").glob("*.yml")), ROOT / "action.yml"]
COMMAND = re.compile(r"(?:^|;|then|&&)\s*(perfci\s[^;&\n]*)")


def _perfci_commands() -> list[str]:
    found = []
    for path in WORKFLOWS:
        for line in path.read_text().splitlines():
            found += [m.group(1).strip() for m in COMMAND.finditer(line.split("run:", 1)[-1])]
    return found


def test_the_workflow_runs_the_gate_through_the_action() -> None:
    commands = " | ".join(_perfci_commands())
    assert "perfci ci " in commands and "perfci trend " in commands


@pytest.mark.parametrize("command", _perfci_commands())
def test_each_workflow_command_parses(command: str) -> None:
    args = [a.replace("${{ github.base_ref }}", "main") for a in shlex.split(command)[1:]]
    result = CliRunner().invoke(app, [*args, "--help"])
    assert result.exit_code == 0, result.output
