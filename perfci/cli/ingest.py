"""`perfci history ingest`: results files into the history store. A module of its own, so that the command imports
neither the trend reports nor the database driver before its worker processes start (perfci/api/ingest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfci.api.ingest import ingest
from perfci.cli.app import guard, history_app, note, project_settings
from perfci.cli.options import DbOpt


@history_app.command("ingest")
def history_ingest(
    results: Annotated[list[Path], typer.Argument(help="Results files to add.")],
    db: DbOpt = None,
    runner: Annotated[
        str | None, typer.Option(help="Runner class (default: $PERFCI_RUNNER, config, fingerprint).")
    ] = None,
) -> None:
    """Add results files to the history store (a run already stored is skipped)."""

    def body() -> int:
        added, skipped = ingest(project_settings(), results, db, runner)
        note(f"ingested {added} run(s), skipped {skipped} already stored")
        return 0

    guard(body)
