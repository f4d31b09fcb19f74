"""`perfci import pytest-benchmark`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfci.api.imports import import_pytest_benchmark_file
from perfci.cli.app import consoles, guard, import_app


@import_app.command("pytest-benchmark")
def import_pytest_benchmark_cmd(
    file: Annotated[Path, typer.Argument(help="pytest-benchmark JSON (saved with --benchmark-save-data).")],
    out: Annotated[Path, typer.Option(help="perfci results file to write.")] = Path("results.json"),
) -> None:
    """Convert a pytest-benchmark JSON file into a perfci results file."""

    def body() -> int:
        run = import_pytest_benchmark_file(file, out)
        _, err = consoles()
        err.print(f"imported {len(run.cases)} benchmark(s) into {out}", highlight=False, markup=False)
        return 0

    guard(body)
