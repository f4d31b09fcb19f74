"""Rich tables for the terminal. They build renderables; the CLI prints them."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from perfci.metrics.registry import BANDWIDTH, LATENCY, ROUND_CV, VS_REFERENCE
from perfci.model import CaseStatus, Comparison, RunResult, Verdict
from perfci.reports.units import format_ratio, format_seconds, format_value, format_vs_reference
from perfci.reports.verdicts import headline, sort_rows

VERDICT_STYLE = {
    Verdict.REGRESSION: "bold red",
    Verdict.IMPROVEMENT: "green",
    Verdict.UNCHANGED: "",
    Verdict.INCONCLUSIVE: "yellow",
    Verdict.NEW: "cyan",
    Verdict.MISSING: "magenta",
    Verdict.ERROR: "bold red",
}


def run_table(run: RunResult) -> Table:
    table = Table(title="perfci results", title_justify="left")
    table.add_column("case", overflow="fold")
    with_ref = any(c.metric(VS_REFERENCE) for c in run.cases)  # only with --speed-reference
    for col in ("median", "95% interval", "noise (round CV)", "rounds", "bandwidth", "status"):
        table.add_column(col)
    if with_ref:
        table.add_column("vs reference")
    for c in run.cases:
        ref = c.metric(VS_REFERENCE)
        ref_cell = [format_vs_reference(ref.value, ref.low, ref.high) if ref else "-"] if with_ref else []
        if c.status is not CaseStatus.OK:
            msg = c.errors[0].message if c.errors else c.status.value
            label = "[bold red]error[/]" if c.status is CaseStatus.ERROR else "[yellow]skipped[/]"
            table.add_row(Text(c.id), "-", "-", "-", str(len(c.rounds)), "-", f"{label}: {escape(msg)}", *ref_cell)
            continue
        med = c.metric(LATENCY)
        cv = c.metric(ROUND_CV)
        bw = c.metric(BANDWIDTH)
        interval = f"{format_seconds(med.low)} .. {format_seconds(med.high)}" if med else "-"
        table.add_row(
            Text(c.id),
            format_seconds(med.value if med else None),
            interval,
            f"{cv.value * 100:.1f}%" if cv else "-",
            str(len(c.rounds)),
            format_value(bw.value, bw.unit) if bw else "-",
            "ok",
            *ref_cell,
        )
    return table


def comparison_table(comparison: Comparison, limit: int | None = None) -> Table:
    """Most urgent rows first; with `limit`, only that many rows and a caption counting the rest."""
    rows = sort_rows(comparison.rows)
    shown = rows if limit is None else rows[:limit]
    caption = f"... and {len(rows) - len(shown):,} more rows (see report.html)" if len(shown) < len(rows) else None
    table = Table(
        title=f"{comparison.baseline_label} -> {comparison.candidate_label}",
        title_justify="left",
        caption=caption,
        caption_justify="left",
    )
    table.add_column("case", overflow="fold")
    for col in ("metric", "baseline", "candidate", "change", "99% interval", "verdict"):
        table.add_column(col)
    for row in shown:
        interval = (
            f"{format_ratio(row.ratio_low)} .. {format_ratio(row.ratio_high)}" if row.ratio_low is not None else "-"
        )
        style = VERDICT_STYLE[row.verdict]
        verdict = f"[{style}]{row.verdict.value}[/]" if style else row.verdict.value
        if row.note:
            verdict += f" ({escape(row.note)})"
        table.add_row(
            Text(row.case_id),
            row.metric,
            format_value(row.baseline, row.unit),
            format_value(row.candidate, row.unit),
            format_ratio(row.ratio),
            interval,
            verdict,
        )
    return table


def verdict_line(comparison: Comparison | None, run: RunResult | None = None) -> str:
    """The one-line verdict (the same text heads the HTML report and the Markdown summary)."""
    return headline(comparison, run)
