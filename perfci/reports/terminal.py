"""Rich tables for the terminal. They build renderables; the CLI prints them."""

from __future__ import annotations

from rich.text import Text

from perfci.format.model import CaseResult, CaseStatus, Comparison, MetricComparison, RunResult, Verdict, printable
from perfci.metrics.definition import MetricRegistry
from perfci.metrics.registry import (
    BANDWIDTH,
    FLOPS,
    LATENCY,
    MEMORY_DEVICE,
    MEMORY_HOST,
    ROUND_CV,
    VS_REFERENCE,
)
from perfci.reports.case_rows import metric_cell, metric_columns
from perfci.reports.case_table import CaseRow, CaseTable, Column
from perfci.reports.gpu_modes import boost_notes, burst_sustained_notes
from perfci.reports.units import format_change_interval, format_ratio, format_seconds, format_value, format_vs_reference
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


RUN_COLUMNS = (
    Column("median", "right"),
    Column("95% interval"),
    Column("noise (round CV)", "right"),
    Column("rounds", "right"),
    Column("memory (own)"),
    Column("bandwidth"),
)
# what the compact layout of a narrow terminal leaves out first (case_table.py)
RUN_DROP_ORDER = ("rounds", "95% interval", "noise (round CV)", "vs reference", "bandwidth", "memory (own)")


def run_table(run: RunResult, registry: MetricRegistry | None = None) -> CaseTable:
    with_ref = any(c.metric(VS_REFERENCE) for c in run.cases)  # only with --speed-reference
    extra = metric_columns(run, registry)  # the metrics with a column of their own (accuracy...) the run has
    columns = (*RUN_COLUMNS, *((Column("vs reference"),) if with_ref else ()), *(Column(d.column) for d in extra),
               Column("status"))  # fmt: skip
    rows = []
    for c in run.cases:
        ref = c.metric(VS_REFERENCE)
        ref_cell = [Text(format_vs_reference(ref.value, ref.low, ref.high) if ref else "-")] if with_ref else []
        if c.status is not CaseStatus.OK:
            msg = c.errors[0].message if c.errors else c.status.value
            label = Text("error", "bold red") if c.status is CaseStatus.ERROR else Text("skipped", "yellow")
            dashes = [Text("-")] * 3 + [Text(str(len(c.rounds)))] + [Text("-")] * 2
            rows.append(
                CaseRow(c.id, (*dashes, *ref_cell, *[Text("-")] * len(extra), label), Text(printable(msg, lines=True)))
            )
            continue
        med = c.metric(LATENCY)
        cv = c.metric(ROUND_CV)
        bw = c.metric(BANDWIDTH)
        interval = f"{format_seconds(med.low)} .. {format_seconds(med.high)}" if med else "-"
        bandwidth = Text(format_value(bw.value, bw.unit) if bw else "-")
        if bw and bw.note:
            bandwidth.append(" implausible", "yellow")
        cells = [format_seconds(med.value if med else None), interval, f"{cv.value * 100:.1f}%" if cv else "-"]
        cells += [str(len(c.rounds)), own_memory(c)]
        flops = c.metric(FLOPS)
        notes = [m.note for m in (bw, flops) if m is not None and m.note]
        note = Text("; ".join(notes)) if notes else None
        own = [Text(metric_cell(c, d)) for d in extra]
        rows.append(CaseRow(c.id, (*map(Text, cells), bandwidth, *ref_cell, *own, Text("ok")), note))
    notes = burst_sustained_notes(run) + boost_notes(run)
    # below the table: a burst figure must not be read as what a long-running job sees
    caption = Text("\n".join(f"note: {n}" for n in notes)) if notes else None
    drop = (*(d.column for d in extra), *RUN_DROP_ORDER)
    return CaseTable(columns, tuple(rows), title="perfci results", caption=caption, drop_order=drop,
                     note_around=(": ", ""))  # fmt: skip


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


COMPARISON_COLUMNS = (
    Column("metric"),
    Column("baseline", "right"),
    Column("candidate", "right"),
    Column("change", "right"),
    Column("99% interval"),
    Column("detects", "right"),
    Column("verdict"),
)
COMPARISON_DROP_ORDER = ("detects", "99% interval", "baseline", "candidate")


def comparison_table(comparison: Comparison, limit: int | None = None, summary_above: int = SUMMARY_ABOVE) -> CaseTable:
    """Most urgent rows first. Above `summary_above` rows, only the rows that are not `unchanged` are listed,
    and a caption counts every verdict. With `limit`, at most that many rows, and the caption counts the rest."""
    rows = sort_rows(comparison.rows)
    summarised = len(rows) > summary_above
    listed = _summary_rows(comparison, rows) if summarised else rows
    shown = listed if limit is None else listed[:limit]
    rows_out = []
    for row in shown:
        interval = format_change_interval(row.ratio_low, row.ratio_high, row.baseline, row.unit)
        cells = [row.metric, format_value(row.baseline, row.unit), format_value(row.candidate, row.unit)]
        cells += [format_ratio(row.ratio), interval, format_mdc(row.mdc)]
        verdict = Text(row.verdict.value, VERDICT_STYLE[row.verdict])
        # a missing row that passes says why it may (`missing allowed (--allow-missing)`), as the JSON does
        note = row.note or (row.expected if row.verdict is Verdict.MISSING else None)
        rows_out.append(
            CaseRow(row.case_id, (*map(Text, cells), verdict), Text(printable(note, lines=True)) if note else None)
        )
    caption = _caption(comparison, len(listed) - len(shown), len(rows) - len(listed) if summarised else None)
    return CaseTable(
        COMPARISON_COLUMNS,
        tuple(rows_out),
        title=f"{comparison.baseline_label} -> {comparison.candidate_label}",
        caption=Text(caption) if caption else None,
        drop_order=COMPARISON_DROP_ORDER,
    )


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
