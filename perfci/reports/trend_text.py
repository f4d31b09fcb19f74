"""Terminal, JSON and Markdown renderings of trends (history + change points); the HTML report is trend_html.py."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from perfci.metrics.definition import WORSE
from perfci.metrics.registry import default_registry
from perfci.reports.case_table import CaseRow, CaseTable, Column
from perfci.reports.markdown import DEFAULT_MAX_ROWS, code
from perfci.reports.trend_counts import (
    ROW_RANK,
    RecentSteps,
    counted_over,
    headline_counts,
    move_call,
    recent_steps,
    row_status,
    trend_call,
    window_words,
)
from perfci.reports.units import format_ratio, format_value
from perfci.store.movers import CALL_RUNS, DEFAULT_WINDOW, WindowMove, movers
from perfci.store.trend import Trend

if TYPE_CHECKING:  # the store imports SQLAlchemy: not at the start of every command
    from perfci.store.history import RunInfo

MAX_TABLE_ROWS = 40  # terminal rows: the worst cases; the full list is in --format json and --html


def _value(t: Trend) -> str:
    """The latest value in the unit stored with it (latency.vs_reference is a ratio, not seconds)."""
    if not t.points:
        return "-"
    return format_value(t.points[-1].value, t.points[-1].unit)


def _severity(t: Trend, recent: RecentSteps) -> tuple[int, float, str, str]:
    """Worse since the last change point first (biggest change first), then better, then a move too recent to call,
    steady, and series too short to call; then by runner and case."""
    rank = ROW_RANK[row_status(t, recent)]
    last = t.shifts[-1].ratio if t.shifts else 1.0
    return (rank, -abs(math.log(last)) if last > 0 else 0.0, t.runner, t.case_id)


# the last column is the verdict, kept whole (reports/case_table.py)
TREND_COLUMNS = tuple(Column(h, "right" if h in ("runs", "latest") else "left") for h in
                      ("runner", "metric", "runs", "latest", "status"))  # fmt: skip


def trend_table(
    items: list[Trend], window: int = DEFAULT_WINDOW, max_rows: int = MAX_TABLE_ROWS, recent: RecentSteps | None = None,
    since: str | None = None,
) -> CaseTable:  # fmt: skip
    """The terminal view, bounded for a fleet: the counts and movers in the title, then at most `max_rows` rows,
    worst first at any size (then by runner and case). `recent`: the rows whose latest runs stepped away
    (trend_counts.recent_steps; by default found in `items` at the default --min-effect); `since`: the `--since`
    window the items were cut to, named in the title."""
    recent = recent_steps(items) if recent is None else recent
    n = headline_counts(trend_call(t, recent) for t in items)  # the same counts as the digest's and the page's
    worse, better = movers(items, window)
    title = (
        f"perfci trend: {len(items)} case(s), {n.worse} worse, {n.better} better"
        f"{' ' + counted_over(since) if since else ''}, {n.steady} steady"
        f"{n.uncalled_phrase()}; "
        f"in the latest {window} runs {len(worse)} regression(s), {len(better)} improvement(s)"
    )
    shown = sorted(items, key=lambda t: _severity(t, recent))[:max_rows]
    caption = (
        f"the {max_rows} worst of {len(items)} rows; all of them: --format json or --html FILE"
        if len(shown) < len(items)
        else None
    )
    rows = []
    for t in shown:
        shifts = "; ".join(f"{s.run_id} {(s.commit or '?')[:10]}: {format_ratio(s.ratio)}" for s in t.shifts)
        status = row_status(t, recent)
        style = {"worse": "bold red", "better": "green"}.get(status, "")
        cells = (Text(t.runner), Text(t.metric), Text(str(len(t.points))), Text(_value(t)), Text(status, style))
        rows.append(CaseRow(t.case_id, cells, Text(shifts) if shifts else None))
    return CaseTable(TREND_COLUMNS, tuple(rows), title=title, caption=Text(caption) if caption else None,
                     drop_order=("runs", "latest", "metric"),
                     note_header="change points (run, commit: change)")  # fmt: skip


def trends_json(items: list[Trend], recent: RecentSteps | None = None) -> list[dict[str, Any]]:
    """`perfci trend --format json`: one object per case; `status` is the table row's word."""
    recent = recent_steps(items) if recent is None else recent
    return [
        {
            "runner": t.runner,
            "case_id": t.case_id,
            "metric": t.metric,
            "points": [p.__dict__ for p in t.points],
            "status": row_status(t, recent),
            "change_points": [s.__dict__ for s in t.shifts],
        }
        for t in items
    ]


def trend_markdown(
    items: list[Trend], env: Mapping[tuple[str, str], str] | None = None, max_rows: int = DEFAULT_MAX_ROWS,
    report: str | None = None, since: str | None = None, recent: RecentSteps | None = None,
) -> str:  # fmt: skip
    """A short Markdown summary for a CI step summary or a chat post: the counts, then the cases whose last change
    point made them worse (biggest first), with the run, commit and any environment change there. Strings from
    the store are code spans (markdown.code), and the rows are bounded (`max_rows`, then a count). `since`: the
    `--since` window the items were cut to; `recent` as for trend_table."""
    recent = recent_steps(items) if recent is None else recent
    worse = sorted(
        ((t, t.shifts[-1]) for t in items if t.status() == "worse"),
        key=lambda ts: -abs(math.log(ts[1].ratio)) if ts[1].ratio > 0 else 0.0,
    )
    n = headline_counts(trend_call(t, recent) for t in items)
    lines = [
        f"### perfci trend: {n.worse} worse, {n.better} better {counted_over(since)}, {n.steady} steady"
        f"{n.uncalled_phrase()} "
        f"({len(items)} case(s))",
        "",
    ]
    if worse:
        lines += [
            "| runner | case | metric | change | run | commit | environment there |",
            "| --- | --- | --- | --: | --- | --- | --- |",
        ]
        for t, s in worse[:max_rows]:
            upgrade = (env or {}).get((t.runner, s.run_id), "")
            cells = [code(t.runner, 60), code(t.case_id), code(t.metric, 40), format_ratio(s.ratio), code(s.run_id, 60)]
            cells += [code((s.commit or "?")[:10], 12), code(upgrade, 120) if upgrade else ""]
            lines.append("| " + " | ".join(cells) + " |")
        if len(worse) > max_rows:
            lines.append(f"\n… and {len(worse) - max_rows} more case(s) that got worse (see the HTML report).")
    if report:
        lines += ["", f"Full trend report: {code(report, 200)} (in this job's artifacts)."]
    return "\n".join(lines) + "\n"


def _words(metric: str) -> tuple[str, str]:
    """How a move of `metric` is said, worse then better (its definition's words: a time gets slower, a size
    grows, others get worse)."""
    d = default_registry().get(metric)
    return d.moves if d is not None else WORSE


def _when(utc: str) -> str:
    return utc[:16].replace("T", " ") + " UTC"


def _status(m: WindowMove) -> str:
    if m.called:
        return "confirmed by the runs since"
    more = f"at least {m.more_runs} more run(s) needed"
    if m.runs_before < CALL_RUNS:
        return (
            f"too early to call: a change needs {CALL_RUNS} runs on each side, and the history has "
            f"{m.runs_before} before it; {more} after it"
        )
    return f"too recent to call: {more}"


def trend_digest(
    moves: list[WindowMove], steady: int, quiet: int, since: str, metric: str,
    env: Mapping[tuple[str, str], str] | None = None, max_rows: int = DEFAULT_MAX_ROWS,
) -> str:  # fmt: skip
    """`perfci trend --format markdown --since 7d`: what moved in the window, per case, in plain words for a lead:
    the change, the run's commit and date, and whether it is confirmed or too recent to call (with how many more
    runs it needs). Strings from the store are code spans; the rows are bounded (`max_rows`, then a count)."""
    n = headline_counts(move_call(m) for m in moves)  # a change too early to call is counted as that, not as worse
    early = n.uncalled
    lines = [
        f"### perfci trend, {window_words(since)}: {n.worse} change(s) for the worse, {n.better} for the better"
        + n.uncalled_phrase(),
        "",
        f"{code(metric, 60)}: {steady} case(s) ran in the window without a change"
        + (f"; {quiet} case(s) did not run in it" if quiet else "")
        + (f". Too recent to call yet: {early} of the changes (the next runs will tell)." if early else "."),
    ]
    if moves:
        lines += [
            "",
            "| case | runner | change | from run | commit | date | status |",
            "| --- | --- | --: | --- | --- | --- | --- |",
        ]
        for m in moves[:max_rows]:
            word = _words(m.metric)[0 if m.worse else 1]
            status = _status(m)
            upgrade = (env or {}).get((m.runner, m.run_id), "")
            status += f"; the environment changed there: {code(upgrade, 120)}" if upgrade else ""
            cells = [code(m.case_id), code(m.runner, 60), f"{format_ratio(m.ratio)} ({word})", code(m.run_id, 60)]
            cells += [code((m.commit or "?")[:10], 12), _when(m.started_at), status]
            lines.append("| " + " | ".join(cells) + " |")
        if len(moves) > max_rows:
            lines.append(f"\n… and {len(moves) - max_rows} more change(s) (see --format json or --html).")
    else:
        lines += ["", "Nothing moved."]
    return "\n".join(lines) + "\n"


def runs_table(items: list[RunInfo]) -> Table:
    """`perfci history list`: one row per stored run, newest first."""
    table = Table(title=f"perfci history: {len(items)} run(s)", title_justify="left")
    for name in ("started", "runner", "branch", "commit", "run", "values"):
        table.add_column(name, justify="right" if name == "values" else "left")
    for r in items:
        commit = (r.commit or "-")[:10] + ("+dirty" if r.dirty else "")
        table.add_row(
            r.started_at[:19].replace("T", " "), Text(r.runner), Text(r.branch or "-"), Text(commit),
            Text(r.run_id), str(r.measurements),
        )  # fmt: skip
    return table


def runs_json(items: list[RunInfo]) -> list[dict[str, Any]]:
    return [dict(r.__dict__) for r in items]
