"""`perfci report`: render results or comparison files again (HTML, and Markdown on request)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfci.api.report import check_outputs, load_inputs, render
from perfci.cli.app import app, consoles, fraction_option, guard
from perfci.reports.terminal import comparison_table, run_table, verdict_line

TABLE_ROWS = 40  # rows of the terminal table; the HTML report has them all


@app.command()
def report(
    results: Annotated[
        list[Path],
        typer.Argument(
            help="A results file; two (baseline, candidate: compared here); or a comparison file, optionally "
            "with the results files it compared (for the charts).",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the HTML report.")] = Path("report.html"),
    markdown: Annotated[
        Path | None, typer.Option(help="Also write the Markdown summary here ('-' for stdout).")
    ] = None,
    threshold: Annotated[
        float, typer.Option(parser=fraction_option, help="Practical threshold when comparing two files: 5% or 0.05.")
    ] = 0.05,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print the table.")] = False,
) -> None:
    """Render results or comparison files again: report.html (and a Markdown summary). Always exits 0 on success."""

    def body() -> int:
        check_outputs(results, out, markdown)
        inputs = load_inputs(results, threshold)
        cand, comparison = inputs.candidate, inputs.comparison
        o, err = consoles()
        text = render(inputs, out, markdown)
        if text is not None:
            o.out(text, end="", highlight=False)
        if not quiet and str(markdown) != "-":
            if comparison is not None:
                o.print(comparison_table(comparison, limit=TABLE_ROWS))
            elif cand is not None:
                o.print(run_table(cand))
        err.print(verdict_line(comparison, cand), highlight=False, markup=False)
        err.print(f"report: {out}" + (f"\nsummary: {markdown}" if markdown and str(markdown) != "-" else ""))
        return 0

    guard(body)
