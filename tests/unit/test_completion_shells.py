"""`perfci --show-completion SHELL` prints SHELL's script (it printed the current shell's, bash, for zsh and fish);
with no shell it is the current shell's, as before; an unknown shell is a usage error."""

from __future__ import annotations

import pytest
import typer.completion
from typer.testing import CliRunner

from perfci.cli import app
from perfci.cli.app import with_current_shell

runner = CliRunner()


def script(*args: str) -> str:
    result = runner.invoke(app, list(args), prog_name="perfci")
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(autouse=True)
def current_shell_is_bash(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shell the tests run in, whatever launched them: bash (the one the bug printed whatever was asked)."""
    monkeypatch.delenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", raising=False)
    monkeypatch.setattr(typer.completion, "_get_shell_name", lambda: "bash")


def test_each_shell_gets_its_own_script() -> None:
    bash, zsh, fish = (script("--show-completion", s) for s in ("bash", "zsh", "fish"))
    assert "complete -o default -F _perfci_completion perfci" in bash and "compdef" not in bash
    assert zsh.startswith("#compdef perfci") and "compdef _perfci_completion perfci" in zsh
    assert "_PERFCI_COMPLETE=complete_zsh" in zsh and zsh != bash
    assert "complete --command perfci" in fish and "_PERFCI_COMPLETE=complete_fish" in fish
    assert len({bash, zsh, fish}) == 3
    assert "Register-ArgumentCompleter" in script("--show-completion", "powershell")
    assert script("--show-completion=zsh") == zsh


def test_without_a_shell_it_is_the_current_shells(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "_PERFCI_COMPLETE=complete_bash" in script("--show-completion")
    monkeypatch.setattr(typer.completion, "_get_shell_name", lambda: "fish")
    assert script("--show-completion") == script("--show-completion", "fish")
    assert script("--debug", "--show-completion") == script("--show-completion", "fish")


def test_an_unknown_shell_is_a_usage_error() -> None:
    result = runner.invoke(app, ["--show-completion", "tcsh"], prog_name="perfci")
    assert result.exit_code == 2 and result.stdout == ""
    assert "'tcsh' is not a shell perfci completes in; use one of bash, zsh, fish, powershell, pwsh" in " ".join(
        result.output.split()
    )


def test_a_shell_is_filled_in_only_where_none_is_named() -> None:
    assert with_current_shell(["--show-completion"]) == ["--show-completion", ""]
    assert with_current_shell(["--show-completion", "--debug"]) == ["--show-completion", "", "--debug"]
    assert with_current_shell(["--show-completion", "zsh"]) == ["--show-completion", "zsh"]
    assert with_current_shell(["--install-completion"]) == ["--install-completion", ""]
    # the options of a command are its own
    assert with_current_shell(["run", "--show-completion"]) == ["run", "--show-completion"]


def test_the_shell_value_is_completed() -> None:
    env = {"_PERFCI_COMPLETE": "complete_bash", "COMP_WORDS": "perfci --show-completion z", "COMP_CWORD": "2"}
    completed = runner.invoke(app, [], prog_name="perfci", env=env)
    assert completed.exit_code == 0 and completed.output.split() == ["zsh"], completed.output
