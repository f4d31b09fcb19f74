"""The CLI is thin: options, printing and exit codes over perfci.api. No statistics, no file formats, no
reading or writing of files in perfci/cli/, and no function longer than 60 lines."""

from __future__ import annotations

import ast
from pathlib import Path

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


def test_cli_reads_and_writes_no_files() -> None:
    calls = [
        f"{p.name}:{n.lineno} calls {name}"
        for p, tree in modules()
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and (name := n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")) in FORBIDDEN_CALLS
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
