"""History, trend and import commands: not there yet, and they say so plainly."""

from __future__ import annotations

from pathlib import Path

from perfci.cli.app import app, history_app, import_app, not_yet


@app.command()
def trend() -> None:
    """Trend report from the history store (not implemented yet)."""
    not_yet("trend")


@history_app.command("ingest")
def history_ingest() -> None:
    """Add results to the history store (not implemented yet)."""
    not_yet("history ingest")


@import_app.command("pytest-benchmark")
def import_pytest_benchmark(file: Path) -> None:
    """Import a pytest-benchmark JSON file (not implemented yet)."""
    not_yet("import pytest-benchmark")
