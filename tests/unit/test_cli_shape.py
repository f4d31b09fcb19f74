"""The CLI is thin: options, printing and exit codes over perfci.api. No statistics, no file formats, no
reading or writing of files in perfci/cli/, and no function longer than 60 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CLI = Path(__file__).parents[2] / "perfci" / "cli"
MAX_LINES = 60
# what would mean statistics or file-format logic in the CLI
FORBIDDEN_MODULES = (
    "perfci.stats",
    "perfci.format.schema",
    "perfci.format.comparison",
    "perfci.store",
    "perfci.engine.worker",
)
FORBIDDEN_CALLS = {"loads", "load", "read_text", "write_text", "open", "dump"}


def modules() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text())) for p in sorted(CLI.glob("*.py"))]


def test_no_cli_function_exceeds_60_lines() -> None:
    long = [
        f"{p.name}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)"
        for p, tree in modules()
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.end_lineno - n.lineno + 1 > MAX_LINES
    ]
    assert not long, "\n".join(long)


def test_cli_imports_no_statistics_or_file_formats() -> None:
    bad = []
    for p, tree in modules():
        for n in ast.walk(tree):
            names = [n.module or ""] if isinstance(n, ast.ImportFrom) else []
            names += [a.name for a in n.names] if isinstance(n, ast.Import) else []
            bad += [f"{p.name}:{n.lineno} imports {m}" for m in names if m.startswith(FORBIDDEN_MODULES)]
    assert not bad, "\n".join(bad)


def _devnull(call: ast.Call) -> bool:
    """`os.open(os.devnull, ...)`: stdout sent nowhere once its reader has gone (cli/__init__.py), no file read."""
    return bool(call.args) and ast.unparse(call.args[0]) == "os.devnull"


def test_cli_reads_and_writes_no_files() -> None:
    calls = [
        f"{p.name}:{n.lineno} calls {name}"
        for p, tree in modules()
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and (name := n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")) in FORBIDDEN_CALLS
        and not _devnull(n)
    ]
    assert not calls, "\n".join(calls)


def test_the_api_public_names_are_one_list() -> None:
    """`perfci.api.__all__` comes from one table; the TYPE_CHECKING imports that give type checkers the same
    names must agree with it, and every name resolves."""
    import ast
    from pathlib import Path

    import perfci.api as api

    tree = ast.parse(Path(api.__file__).read_text())
    typed = {
        (node.module, alias.name)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and getattr(block.test, "id", "") == "TYPE_CHECKING"
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert typed == {(module, name) for name, module in api._WHERE.items()}
    assert all(getattr(api, name) is not None for name in api.__all__)


def test_version_prints_the_version_and_exits_0() -> None:
    from typer.testing import CliRunner

    from perfci import __version__
    from perfci.cli import load_commands

    result = CliRunner().invoke(load_commands(["--version"]), ["--version"], prog_name="perfci")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"perfci {__version__}"


def test_shell_completion_options_and_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--show-completion SHELL` prints a script that calls back with _PERFCI_COMPLETE; that protocol completes
    command names (the typer app with every command registered)."""
    from typer.testing import CliRunner

    from perfci.cli import load_commands

    app = load_commands()
    help_text = CliRunner().invoke(app, ["--help"], prog_name="perfci").output
    assert "--install-completion" in help_text and "--show-completion" in help_text
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")  # the shell named, not detected
    shown = CliRunner().invoke(app, ["--show-completion", "bash"], prog_name="perfci")
    monkeypatch.delenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION")
    assert shown.exit_code == 0 and "_PERFCI_COMPLETE=complete_bash" in shown.output, shown.output
    env = {"_PERFCI_COMPLETE": "complete_bash", "COMP_WORDS": "perfci comp", "COMP_CWORD": "1"}
    completed = CliRunner().invoke(app, [], prog_name="perfci", env=env)
    assert completed.exit_code == 0 and completed.output.split() == ["compare"], completed.output
    env = {"_PERFCI_COMPLETE": "complete_bash", "COMP_WORDS": "perfci compare --thre", "COMP_CWORD": "2"}
    assert "--threshold" in CliRunner().invoke(app, [], prog_name="perfci", env=env).output.split()
