"""`perfci compare`, `perfci ab`, `perfci baseline ...`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfci.cli.app import OutputFormat, app, baseline_app, guard, not_yet, print_comparison
from perfci.compare.decide import DecisionSettings, compare_runs
from perfci.compare.gate import ExitCode, gate
from perfci.reports.html import write_html
from perfci.schema import load_results


@app.command()
def compare(
    baseline: Annotated[Path, typer.Argument(help="Baseline results file.")],
    candidate: Annotated[Path, typer.Argument(help="Candidate results file.")],
    threshold: Annotated[float, typer.Option(help="Practical threshold (0.05 = 5%).")] = 0.05,
    html: Annotated[Path | None, typer.Option(help="Also write an HTML report here.")] = None,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Report only; always exit 0.")] = False,
    fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.table,
) -> None:
    """Compare two results files; exit 1 on a regression."""

    def body() -> int:
        base, cand = load_results(baseline), load_results(candidate)
        comparison = compare_runs(base, cand, DecisionSettings(threshold=threshold), (str(baseline), str(candidate)))
        print_comparison(comparison, cand, fmt)
        if html is not None:
            write_html(html, cand, comparison)
        code = gate(comparison)
        return ExitCode.OK if exit_zero else code

    guard(body)


@app.command()
def ab(base_rev: str, head_rev: Annotated[str, typer.Argument()] = "HEAD") -> None:
    """Same-machine A/B of two git revisions (not implemented yet)."""
    not_yet("ab")


@baseline_app.command("update")
def baseline_update() -> None:
    """Accept current results as the baseline (not implemented yet)."""
    not_yet("baseline update")


@baseline_app.command("show")
def baseline_show() -> None:
    """Show the stored baseline (not implemented yet)."""
    not_yet("baseline show")
