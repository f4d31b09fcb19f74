"""`perfci report`: render results or comparison files again (HTML, and Markdown on request)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from perfci.cli.app import app, consoles, guard
from perfci.compare.decide import DecisionSettings, compare_runs
from perfci.compare.saved import SCHEMA_NAME as COMPARISON_SCHEMA
from perfci.compare.saved import load_comparison
from perfci.errors import ResultsFormatError, UsageError
from perfci.model import Comparison, RunResult
from perfci.reports.html import write_html
from perfci.reports.markdown import render_markdown
from perfci.reports.terminal import comparison_table, run_table, verdict_line
from perfci.schema import SCHEMA_NAME as RESULTS_SCHEMA
from perfci.schema import load_results

TABLE_ROWS = 40  # rows of the terminal table; the HTML report has them all


def _kind(path: Path) -> str:
    """'results' or 'comparison', from the file's "schema" field (the loaders then validate it fully)."""
    try:
        doc: Any = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise ResultsFormatError(f"{path}: file not found.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsFormatError(f"{path}: not a readable JSON file ({exc}).") from None
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if schema == RESULTS_SCHEMA:
        return "results"
    if schema == COMPARISON_SCHEMA:
        return "comparison"
    raise ResultsFormatError(
        f"{path}: neither a perfci results file nor a comparison file (schema {schema!r}).",
        hint="pass a results.json or comparison.json written by perfci",
    )


def _sides(comparison: Comparison, runs: list[RunResult]) -> tuple[RunResult | None, RunResult | None]:
    """Match results files to the comparison's sides by run id; otherwise by order (baseline first)."""
    ids = [getattr(comparison, side, {}).get("run_id") for side in ("baseline_run", "candidate_run")]
    by_id = {r.run_id: r for r in runs}
    base, cand = by_id.get(ids[0] or ""), by_id.get(ids[1] or "")
    if base is None and cand is None and runs:
        base, cand = (runs[0], runs[1]) if len(runs) > 1 else (None, runs[0])
    return base, cand


def load_inputs(paths: list[Path], threshold: float) -> tuple[RunResult | None, Comparison | None, RunResult | None]:
    """(candidate run, comparison, baseline run) from 1-3 files."""
    kinds = [_kind(p) for p in paths]
    comparisons = [p for p, k in zip(paths, kinds, strict=True) if k == "comparison"]
    runs = [load_results(p) for p, k in zip(paths, kinds, strict=True) if k == "results"]
    if len(comparisons) > 1 or len(runs) > 2:
        raise UsageError(
            "give one results file, two (baseline then candidate), or one comparison file "
            "(optionally with the results files it compared)."
        )
    if comparisons:
        comparison = load_comparison(comparisons[0])
        base, cand = _sides(comparison, runs)
        return cand, comparison, base
    if len(runs) == 2:
        labels = (str(paths[kinds.index("results")]), str(paths[len(paths) - 1]))
        return runs[1], compare_runs(runs[0], runs[1], DecisionSettings(threshold=threshold), labels), runs[0]
    return runs[0], None, None


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
    threshold: Annotated[float, typer.Option(help="Practical threshold when comparing two results files.")] = 0.05,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print the table.")] = False,
) -> None:
    """Render results or comparison files again: report.html (and a Markdown summary). Always exits 0 on success."""

    def body() -> int:
        cand, comparison, base = load_inputs(results, threshold)
        o, err = consoles()
        write_html(out, cand, comparison, base)
        if markdown is not None:
            text = render_markdown(cand, comparison, base, report=out.name)
            if str(markdown) == "-":
                o.out(text, end="", highlight=False)
            else:
                markdown.parent.mkdir(parents=True, exist_ok=True)
                markdown.write_text(text, "utf-8")
        if not quiet and str(markdown) != "-":
            if comparison is not None:
                o.print(comparison_table(comparison, limit=TABLE_ROWS))
            elif cand is not None:
                o.print(run_table(cand))
        err.print(verdict_line(comparison, cand), highlight=False, markup=False)
        err.print(f"report: {out}" + (f"\nsummary: {markdown}" if markdown and str(markdown) != "-" else ""))
        return 0

    guard(body)
