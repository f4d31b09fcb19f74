"""`perfci report`."""

from __future__ import annotations

from pathlib import Path

from perfci.cli.app import app, not_yet


@app.command()
def report(results: list[Path]) -> None:
    """Render a results or comparison file again (not implemented yet)."""
    not_yet("report")
