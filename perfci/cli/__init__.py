"""Command-line interface (typer): the only layer that reads argv/env, prints and exits.

A package rather than one module: one module per command group, so that
commands stay small and separate; `app.py` holds the shared machinery. Nothing outside `perfci.cli` prints.
"""

from perfci.api.sizes import parse_size
from perfci.cli import ci, compare, history, imports, report, run  # noqa: F401  (registers the commands)
from perfci.cli.app import app


def entrypoint() -> None:
    app(prog_name="perfci")


__all__ = ["app", "entrypoint", "parse_size"]
