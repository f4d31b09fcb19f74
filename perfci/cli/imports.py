"""`perfci import pytest-benchmark`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfci.cli.app import consoles, guard, import_app
from perfci.importers.pytest_benchmark import import_pytest_benchmark
from perfci.schema import dump_results


@import_app.command("pytest-benchmark")
def import_pytest_benchmark_cmd(
    file: Annotated[Path, typer.Argument(help="pytest-benchmark JSON (saved with --benchmark-save-data).")],
    out: Annotated[Path, typer.Option(help="perfci results file to write.")] = Path("results.json"),
) -> None:
    """Convert a pytest-benchmark JSON file into a perfci results file."""

    def body() -> int:
        run = import_pytest_benchmark(file)
        dump_results(run, out)
        _, err = consoles()
        err.print(f"imported {len(run.cases)} benchmark(s) into {out}", highlight=False)
        return 0

    guard(body)
