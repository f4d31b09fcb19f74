"""`perfci import pytest-benchmark`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfci.api.imports import import_pytest_benchmark_file, import_warnings
from perfci.cli.app import guard, import_app, note


@import_app.command("pytest-benchmark")
def import_pytest_benchmark_cmd(
    file: Annotated[Path, typer.Argument(help="pytest-benchmark JSON (saved with --benchmark-save-data).")],
    out: Annotated[
        Path | None,
        typer.Option(
            help="perfci results file to write.", show_default="FILE's name with .perfci.json, in this folder"
        ),
    ] = None,
) -> None:
    """Convert a pytest-benchmark JSON file into a perfci results file."""

    def body() -> int:
        # named after its source, so that importing a second session does not replace the first one's import
        target = out if out is not None else Path(f"{file.stem}.perfci.json")
        run = import_pytest_benchmark_file(file, target)
        note(f"imported {len(run.cases)} benchmark(s) into {target}")
        for warning in import_warnings(run):
            note(f"warning: {warning}.")
        return 0

    guard(body)
