"""`perfci history ingest`: results files into the history store. A module of its own, so that the command imports
neither the trend reports nor the database driver before its worker processes start (perfci/api/ingest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfci.api.ingest import ingest, no_commit_warning
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
        done = ingest(project_settings(), results, db, runner)
        note(f"ingested {done.added} run(s), skipped {done.skipped} already stored")
        if done.without_commit:
            note(f"warning: {no_commit_warning(done.without_commit)}")
        return 0

    guard(body)
