"""`perfci report`: render results or comparison files again (HTML, and Markdown on request)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfci.api.report import check_outputs, load_inputs, render
from perfci.cli.app import OutputFormat, app, consoles, guard, print_decisions, project_settings
from perfci.cli.options import ConfigOpt, MaxMemoryOpt, RankOpt, option
from perfci.options import THRESHOLD
from perfci.reports.terminal import comparison_table, run_table, verdict_line

TABLE_ROWS = 40  # rows of the terminal table; the HTML report has them all


MARKDOWN_HELP = (
    "The Markdown summary's path ('-' for stdout) [default: summary.md beside report.html; beside an --out "
    "FILE.html, FILE.md]."
)


@app.command()
def report(
    results: Annotated[
        list[Path],
        typer.Argument(
            help="A results file; two (baseline, candidate: compared here); or a comparison file, optionally "
            "with the results files it compared (for the charts).",
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="A folder for report.html and summary.md, or the HTML file's path (ending in .html) [default: the "
            "comparison file's folder, else the candidate's: the second of two results files, or the one given].",
        ),
    ] = None,
    markdown: Annotated[
        Path | None,
        typer.Option(help=MARKDOWN_HELP),
    ] = None,
    threshold: Annotated[
        float | None,
        option(
            THRESHOLD,
            help=f"{THRESHOLD.help}, when comparing two results files (as `perfci compare` does) "
            f"[default: {THRESHOLD.shown_default()}]",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print the table.")] = False,
    rank: RankOpt = None,
    max_memory: MaxMemoryOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Render results or comparison files again: report.html (and a Markdown summary). Always exits 0 on success."""

    def body() -> int:
        settings = project_settings(config)
        inputs = load_inputs(results, threshold, settings)
        html, summary = report_paths(inputs.folder, out, markdown)
        check_outputs(results, html, summary)
        cand, comparison = inputs.candidate, inputs.comparison
        o, err = consoles()
        view = settings.decisions(rank, max_memory).for_run(cand)  # worked out once: report, summary, terminal
        text = render(inputs, html, summary, view)
        if text is not None:
            o.out(text, end="", highlight=False)
        if not quiet and str(summary) != "-":
            if comparison is not None:
                o.print(comparison_table(comparison, limit=TABLE_ROWS))
            elif cand is not None:
                o.print(run_table(cand))
            print_decisions(cand, view, OutputFormat.table)
        err.print(verdict_line(comparison, cand), highlight=False, markup=False)
        err.print(
            f"report: {html}" + (f"\nsummary: {summary}" if str(summary) != "-" else ""), highlight=False, markup=False
        )
        return 0

    guard(body)


def report_paths(beside: Path, out: Path | None, markdown: Path | None) -> tuple[Path, Path]:
    """Where the HTML report and the Markdown summary go: in the folder `beside` (the comparison file's, else the
    candidate's: api/report.py), or under `--out` (a folder), or at `--out` when it names an .html file (the summary
    beside it, under the report's name with .md: `-o docs/perf.html` wrote over a `docs/summary.md` it had not
    written); `--markdown` names the summary's own path."""
    if out is not None and (out.suffix.lower() == ".html" or out.is_file()):
        return out, markdown if markdown is not None else out.with_suffix(".md")
    html = (out if out is not None else beside) / "report.html"
    return html, markdown if markdown is not None else html.with_name("summary.md")
