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


def _gate_script() -> str:
    """The action's `perfci ci` step's script (action.yml, the step with `id: gate`)."""
    lines = (ROOT / "action.yml").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "id: gate")
    run = next(i for i in range(start, len(lines)) if lines[i].strip() == "run: |")
    indent = len(lines[run + 1]) - len(lines[run + 1].lstrip())
    body = []
    for line in lines[run + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            break
        body.append(line[indent:])
    return "\n".join(body) + "\n"


@pytest.mark.parametrize(
    ("perfci_does", "code", "verdict"),
    [
        ('echo "verdict=regression" >> "$GITHUB_OUTPUT"; exit 1', 1, "regression"),
        ('echo "Usage: perfci ci ... Invalid value for --threshold" >&2; exit 2', 2, "error"),
        ('echo "verdict=pass" >> "$GITHUB_OUTPUT"; exit 0', 0, "pass"),
    ],
    ids=["regression", "refused-option", "pass"],
)
def test_the_gate_step_records_the_code_and_the_pull_request_under_bash_e(
    tmp_path: Path, perfci_does: str, code: int, verdict: str
) -> None:
    """GitHub runs a composite step's `shell: bash` as `bash --noprofile --norc -eo pipefail`: a failing gate
    ended the step at the `perfci ci` line, so no `code=` output and no pr-number.txt (no comment on a failing
    pull request), and an option perfci refused left the `verdict` output empty."""
    import os
    import subprocess

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "perfci"
    fake.write_text(f"#!/usr/bin/env bash\n{perfci_does}\n")  # a stand-in for `perfci ci ARGS`
    fake.chmod(0o755)
    script = tmp_path / "gate.sh"
    script.write_text(_gate_script())
    outputs, out = tmp_path / "github_output", tmp_path / "out"
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "GITHUB_OUTPUT": str(outputs), "MODE": "auto",
        "BASE_REF": "", "PATHS": "perf", "SUITES": "", "RUNNER_CLASS": "", "THRESHOLD": "3%", "FAIL": "true",
        "SHARD": "", "BUDGET": "900", "EXTRA_ARGS": "", "OUT": str(out), "PR_NUMBER": "7",
    }  # fmt: skip
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr  # the later step exits with the gate's code
    written = outputs.read_text().splitlines()
    assert f"code={code}" in written and f"verdict={verdict}" in written, written
    if verdict == "error":  # the action's `exit-code` output, as perfci writes it for errors it publishes
        assert f"exit-code={code}" in written, written
    assert (out / "pr-number.txt").read_text().strip() == "7"
    assert ("::error title=perfci::perfci ci exited 2 before a verdict" in proc.stdout) == (verdict == "error")
