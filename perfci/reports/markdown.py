"""Markdown summary for pull-request comments and the CI step summary (GitHub-flavoured Markdown).

The verdict line, what the comparison could detect (the minimum detectable change most timed rows reach), a
short table of the cases that need a look (regressions, errors, inconclusive, missing), a short "below the
threshold" table of the `slower` rows (established slowdowns smaller than the threshold), or, for a run without a
comparison, of its errors and of each measured case (median, interval, own memory), and a pointer to the HTML
report. It stays under `budget` characters for any suite size (GitHub refuses
comments over 65,536 characters): rows beyond `max_rows` or the budget are counted in a truncation line.

Every string that came from a results file (case ids, labels, notes) is written as a code span: Markdown,
HTML and @-mentions in it stay inert, and `|` is escaped so it cannot split a table cell.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TypeVar

from perfci.format.jsonfile import write_text_atomic
from perfci.format.model import (
    BELOW_THRESHOLD_WORSE,
    CaseResult,
    CaseStatus,
    Comparison,
    MetricComparison,
    RunResult,
    Verdict,
    printable,
)
from perfci.metrics.definition import MetricDef
from perfci.metrics.registry import BANDWIDTH, FLOPS, LATENCY, MEMORY_DEVICE, MEMORY_HOST
from perfci.reports.case_rows import fingerprint_mismatches, metric_cell, metric_columns, side_fingerprint
from perfci.reports.clocks import clock_lines, launch_bound_lines
from perfci.reports.decision_lines import markdown_lines
from perfci.reports.decisions import BY_TIME, DecisionView
from perfci.reports.gpu_modes import boost_notes, burst_sustained_notes
from perfci.reports.units import format_change_interval, format_ratio, format_value
from perfci.reports.verdicts import expected_reason, format_mdc, headline, sensitivity, sort_rows

DEFAULT_BUDGET = 60_000
DEFAULT_MAX_ROWS = 50
LISTED = (Verdict.REGRESSION, Verdict.ERROR, Verdict.INCONCLUSIVE, Verdict.MISSING)
_HEAD = (
    "| verdict | case | metric | change | interval | detects | baseline | candidate |\n"
    "| --- | --- | --- | --: | --: | --: | --: | --: |"
)
T = TypeVar("T")
MAX_SLOWER_ROWS = 10  # the "below the threshold" section is short: the largest slowdowns, the rest counted
_RUN_HEAD = "| case | median | interval | memory (host) | memory (device) |\n| --- | --: | --: | --: | --: |"


def code(text: object, limit: int = 200) -> str:
    """`text` as an inline code span that is safe in a table cell (one line, pipes escaped, length bounded)."""
    s = printable(" ".join(str(text).split()))  # ESC sequences from a message reached the PR comment raw
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    s = s.replace("|", "\\|")
    if not s:
        return ""
    run, longest = 0, 0
    for ch in s:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if longest or s.startswith(" ") or s.endswith(" ") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def _row(r: MetricComparison) -> str:
    interval = format_change_interval(r.ratio_low, r.ratio_high, r.baseline, r.unit)
    verdict = r.verdict.value + (f" (expected: {code(expected_reason(r), 80)})" if expected_reason(r) else "")
    if r.note and r.verdict is not Verdict.UNCHANGED:  # why: beyond a declared change, missing, confirmed by A/B...
        verdict += f" {code(r.note, 120)}"
    cells = [
        verdict,
        code(r.case_id),
        code(r.metric, 40),
        format_ratio(r.ratio),
        interval,
        format_mdc(r.mdc),
        format_value(r.baseline, r.unit),
        format_value(r.candidate, r.unit),
    ]
    return "| " + " | ".join(cells) + " |"


def _run_head(extra: tuple[MetricDef, ...]) -> str:
    """The measured cases' table head: _RUN_HEAD and a column per metric with one of its own (`extra`)."""
    if not extra:
        return _RUN_HEAD
    head, rule = _RUN_HEAD.split("\n")
    return head + "".join(f" {d.column} |" for d in extra) + "\n" + rule + " --: |" * len(extra)


def _run_row(c: CaseResult, extra: tuple[MetricDef, ...] = ()) -> str:
    """A measured case of a plain run: its median with its interval, its own memory (the registry's), and its
    values of the metrics with a column of their own (`extra`, with the case's tolerance where it has one)."""
    m = c.metric(LATENCY)
    unit = m.unit if m else "s"
    interval = f"{format_value(m.low, unit)} .. {format_value(m.high, unit)}" if m and m.low is not None else "-"
    memory = [c.metric(name) for name in (MEMORY_HOST, MEMORY_DEVICE)]
    cells = [code(c.id), format_value(m.value if m else None, unit), interval]
    cells += [format_value(x.value, x.unit) if x else "-" for x in memory]
    cells += [metric_cell(c, d) for d in extra]
    return "| " + " | ".join(cells) + " |"


def _table(
    lines: list[str],
    items: Sequence[T],
    row: Callable[[T], str],
    what: str,
    report: str,
    budget: int,
    max_rows: int,
    head: str = _HEAD,
) -> None:
    """Append a table of `items` (each made a line by `row`) to `lines`, stopping at `max_rows` or before `budget`
    characters; only the rows shown are formatted (a 5,000-case comparison shows a few dozen)."""
    if not items:
        return
    lines.extend(["", head])
    used = sum(len(x) + 1 for x in lines)
    reserve = 200  # the truncation line and the footer
    shown = 0
    for item in items[:max_rows]:
        text = row(item)
        if used + len(text) + 1 > budget - reserve:
            break
        lines.append(text)
        used += len(text) + 1
        shown += 1
    if shown < len(items):
        lines.append("")
        lines.append(f"… and {len(items) - shown:,} more {what} (see {report})")


def render_markdown(
    run: RunResult | None,
    comparison: Comparison | None,
    baseline: RunResult | None = None,
    report: str = "report.html",
    max_rows: int = DEFAULT_MAX_ROWS,
    budget: int = DEFAULT_BUDGET,
    decisions: DecisionView = BY_TIME,
) -> str:
    lines = [f"### perfci: {headline(comparison, run)}", ""]
    if comparison is not None:
        lines.append(f"Baseline {code(comparison.baseline_label)} → candidate {code(comparison.candidate_label)}.")
        fp_b = side_fingerprint(baseline, getattr(comparison, "baseline_run", {}) or {})
        fp_c = side_fingerprint(run, getattr(comparison, "candidate_run", {}) or {})
        mismatches = fingerprint_mismatches(fp_b, fp_c) if fp_b and fp_c else []
        if mismatches:
            keys = ", ".join(code(k, 60) for k, _, _ in mismatches[:5])
            more = f" and {len(mismatches) - 5} more" if len(mismatches) > 5 else ""
            lines.append(f"\n**Runner fingerprint mismatch**: {keys}{more} differ between baseline and candidate.")
        for w in comparison.warnings[:5]:
            lines.append(f"\n> warning: {code(w, 300)}")
        lines += _sensitivity_lines(comparison)
        lines += _clock_lines(comparison, max_rows)
        ordered = sort_rows(comparison.rows)
        listed = [r for r in ordered if r.verdict in LISTED]
        _table(lines, listed, _row, "cases", report, budget, max_rows)
        if not listed:
            lines.append("\nNo regressions, errors or inconclusive cases.")
        worse = [r for r in ordered if r.verdict in BELOW_THRESHOLD_WORSE]
        _below_threshold(lines, worse, comparison, report, budget)
        improved = sum(1 for r in comparison.rows if r.verdict is Verdict.IMPROVEMENT)
        faster = sum(1 for r in comparison.rows if r.verdict is Verdict.FASTER)
        shrank = sum(1 for r in comparison.rows if r.verdict is Verdict.SHRANK)
        if improved or faster or shrank:
            parts = [f"{improved:,} improvement(s)"] if improved else []
            parts += [f"{faster:,} faster below the threshold"] if faster else []
            parts += [f"{shrank:,} smaller in memory below the threshold"] if shrank else []
            lines.append(f"\n{', '.join(parts)}: see {report}.")
    elif run is not None:
        failed = [c for c in run.cases if c.status is CaseStatus.ERROR]
        rows = [
            f"| error | {code(c.id)} | {code(c.errors[0].kind if c.errors else 'error', 40)} | "
            f"{code(c.errors[0].message if c.errors else '', 160)} |"
            for c in failed
        ]
        if rows:
            lines.extend(["", "| status | case | kind | message |", "| --- | --- | --- | --- |"])
            lines.extend(rows[:max_rows])
            if len(rows) > max_rows:
                lines.append(f"\n… and {len(rows) - max_rows:,} more cases (see {report})")
        extra = metric_columns(run)
        measured = [c for c in run.cases if c.status is CaseStatus.OK]
        _table(lines, measured, partial(_run_row, extra=extra), "measured cases", report, budget, max_rows,
               _run_head(extra))  # fmt: skip
    lines += markdown_lines(decisions.tables(run), code)
    lines += _implausible_lines(run, max_rows)
    lines += [f"\n> note: {code(c)}: {words}" for c, words in launch_bound_lines(run)[:max_rows]]
    lines += [f"\n> note: {code(n, 300)}" for n in burst_sustained_notes(run) + boost_notes(run)]
    lines.append(f"\nFull report: `{report}` in the CI artifacts (charts, every case, the runner fingerprint).")
    text = "\n".join(lines) + "\n"
    return text if len(text) <= budget else text[: budget - 40] + "\n\n… (summary truncated)\n"


def _clock_lines(comparison: Comparison, max_rows: int) -> list[str]:
    """Which clock moved, per CUDA case with a device clock (reports/clocks.py)."""
    found = clock_lines(comparison)
    if not found:
        return []
    lines = ["", "Two clocks (device time = the GPU's kernels; host overhead = the rest of each call):", ""]
    lines += [f"- {code(case)}: {words}" for case, words in found[:max_rows]]
    if len(found) > max_rows:
        lines.append(f"- … and {len(found) - max_rows:,} more cases")
    return lines


def _sensitivity_lines(comparison: Comparison) -> list[str]:
    """The sensitivity sentence ("This A/B could detect changes of 1.1% or more in 14 of 15 cases") and the
    least sensitive case."""
    sens = sensitivity(comparison)
    if sens is None:
        return []
    line = f"\n{sens.sentence()[0].upper()}{sens.sentence()[1:]} (80% power, one-sided at the confidence used)."
    if sens.covered < sens.timed and sens.least.mdc is not None:
        line += f" Least sensitive: {code(sens.least.case_id, 120)} ({format_mdc(sens.least.mdc)})."
    return [line]


def _below_threshold(
    lines: list[str], slower: list[MetricComparison], comparison: Comparison, report: str, budget: int
) -> None:
    """The `slower` and `grew` rows: established slowdowns and memory growth smaller than the threshold, which do
    not fail the gate unless fail_on = "slower" (then they are failing and said so)."""
    if not slower:
        return
    gating = comparison.settings.get("fail_on") == "slower"
    grew = sum(1 for r in slower if r.verdict is Verdict.GREW)
    what = [f"{len(slower) - grew:,} established slowdown(s)"] if len(slower) > grew else []
    what += [f"{grew:,} certain memory growth(s)"] if grew else []
    lines.append("\n#### Below the threshold")
    lines.append(
        f"\n{' and '.join(what)} smaller than the practical threshold"
        + (" (they fail this gate: fail_on = slower)." if gating else "; they do not fail the gate, but they add up.")
    )
    _table(lines, slower, _row, "slower cases", report, budget, MAX_SLOWER_ROWS)


def _implausible_lines(run: RunResult | None, max_rows: int) -> list[str]:
    """Cases whose bandwidth or FLOP/s is above the measured peak: shown as implausible, with why (not compared)."""
    what = {BANDWIDTH: "bandwidth", FLOPS: "FLOP/s"}
    marked = [(c.id, m) for c in (run.cases if run else ()) for m in c.metrics if m.name in what and m.note]
    return [
        f"\n> implausible {what[m.name]}: {code(case)} {format_value(m.value, m.unit)}: {code(m.note, 300)}"
        for case, m in marked
    ][:max_rows]


def write_markdown(
    path: Path,
    run: RunResult | None,
    comparison: Comparison | None,
    baseline: RunResult | None = None,
    decisions: DecisionView = BY_TIME,
) -> None:
    write_text_atomic(path, render_markdown(run, comparison, baseline, decisions=decisions))
