"""Rich tables for the terminal. They build renderables; the CLI prints them."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from perfci.format.model import CaseResult, CaseStatus, Comparison, MetricComparison, RunResult, Verdict
from perfci.metrics.registry import BANDWIDTH, LATENCY, MEMORY_DEVICE, MEMORY_HOST, ROUND_CV, VS_REFERENCE
from perfci.reports.gpu_modes import boost_notes, burst_sustained_notes
from perfci.reports.units import format_ratio, format_seconds, format_value, format_vs_reference
from perfci.reports.verdicts import count_phrase, format_mdc, headline, sensitivity, sort_rows, verdict_counts

VERDICT_STYLE = {
    Verdict.REGRESSION: "bold red",
    Verdict.IMPROVEMENT: "green",
    Verdict.SLOWER: "red",
    Verdict.FASTER: "green",
    Verdict.GREW: "red",
    Verdict.SHRANK: "green",
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
    for col in ("median", "95% interval", "noise (round CV)", "rounds", "memory (own)", "bandwidth", "status"):
        table.add_column(col)
    if with_ref:
        table.add_column("vs reference")
    for c in run.cases:
        ref = c.metric(VS_REFERENCE)
        ref_cell = [format_vs_reference(ref.value, ref.low, ref.high) if ref else "-"] if with_ref else []
        if c.status is not CaseStatus.OK:
            msg = c.errors[0].message if c.errors else c.status.value
            label = "[bold red]error[/]" if c.status is CaseStatus.ERROR else "[yellow]skipped[/]"
            row = ("-", "-", "-", str(len(c.rounds)), "-", "-", f"{label}: {escape(msg)}")
            table.add_row(Text(c.id), *row, *ref_cell)
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
            own_memory(c),
            (format_value(bw.value, bw.unit) + (" [yellow]implausible[/]" if bw.note else "")) if bw else "-",
            "ok" + (f": {escape(bw.note)}" if bw and bw.note else ""),
            *ref_cell,
        )
    notes = burst_sustained_notes(run) + boost_notes(run)
    if notes:  # below the table: a burst figure must not be read as what a long-running job sees
        table.caption, table.caption_justify = Text("\n".join(f"note: {n}" for n in notes)), "left"
    return table


def own_memory(case: CaseResult) -> str:
    """The case's own memory: host, and device for a case on a GPU (profilers/case_memory.py)."""
    parts = [
        f"{side} {format_value(m.value, m.unit)}"
        for side, name in (("host", MEMORY_HOST), ("device", MEMORY_DEVICE))
        if (m := case.metric(name)) is not None
    ]
    return ", ".join(parts) or "-"


# A comparison of more rows than this is summarised in the terminal: the rows that are not `unchanged`, then the
# counts. The full table is in `--format json` and the HTML report.
SUMMARY_ABOVE = 50
# ... of which every row that fails the gate or errored, and at most this many others (inconclusive, new, missing,
# improvements, most urgent first): an unpaired comparison of 5,000 noisy cases is 5,000 inconclusive rows, and a
# terminal (or a CI log) cannot use them; rich would take seconds to lay them out
SUMMARY_OTHER_ROWS = 100


def comparison_table(comparison: Comparison, limit: int | None = None, summary_above: int = SUMMARY_ABOVE) -> Table:
    """Most urgent rows first. Above `summary_above` rows, only the rows that are not `unchanged` are listed,
    and a caption counts every verdict. With `limit`, at most that many rows, and the caption counts the rest."""
    rows = sort_rows(comparison.rows)
    summarised = len(rows) > summary_above
    listed = _summary_rows(comparison, rows) if summarised else rows
    shown = listed if limit is None else listed[:limit]
    table = Table(
        title=f"{comparison.baseline_label} -> {comparison.candidate_label}",
        title_justify="left",
        caption=_caption(comparison, len(listed) - len(shown), len(rows) - len(listed) if summarised else None),
        caption_justify="left",
    )
    table.add_column("case", overflow="fold")
    for col in ("metric", "baseline", "candidate", "change", "99% interval", "detects", "verdict"):
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
            format_mdc(row.mdc),
            verdict,
        )
    return table


def _summary_rows(comparison: Comparison, rows: list[MetricComparison]) -> list[MetricComparison]:
    """The rows a summary lists, in `rows`' order: every row failing the gate or errored, then up to
    SUMMARY_OTHER_ROWS of the others that are not `unchanged`."""
    must = {id(r) for r in comparison.failing} | {id(r) for r in rows if r.verdict is Verdict.ERROR}
    listed, others = [], 0
    for r in rows:
        if id(r) in must:
            listed.append(r)
        elif r.verdict is not Verdict.UNCHANGED:
            others += 1
            if others <= SUMMARY_OTHER_ROWS:
                listed.append(r)
    return listed


def _caption(comparison: Comparison, cut: int, left_out: int | None) -> str | None:
    """What the table leaves out: rows cut by the limit, and (summarised) the counts of every verdict; then what
    the comparison could detect ("detects": the minimum detectable change of each row, 80% power)."""
    lines = [f"... and {cut:,} more rows (see report.html)"] if cut else []
    sens = sensitivity(comparison)
    if left_out is not None:  # summarised
        counts = verdict_counts(comparison)
        phrases = ", ".join(count_phrase(n, v) for v, n in counts.items() if n)
        unchanged = counts[Verdict.UNCHANGED]
        more = left_out - unchanged
        parts = [
            f"the {unchanged:,} unchanged" if unchanged else "",
            f"{more:,} more that do not fail the gate" if more else "",
        ]
        what = " and ".join(p for p in parts if p) or "none"
        lines.append(f"{len(comparison.rows):,} rows: {phrases}; not listed: {what} (every row: --format json, "
                     "report.html)")  # fmt: skip
    if sens is not None:
        lines.append(f"detects: minimum detectable change (80% power); {sens.sentence()}")
    return "\n".join(lines) or None


def verdict_line(comparison: Comparison | None, run: RunResult | None = None) -> str:
    """The one-line verdict (the same text heads the HTML report and the Markdown summary)."""
    return headline(comparison, run)
