"""`perfci history ingest|prune|noise`, `perfci trend`: options, printing and exit codes over
perfci.api.history."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from perfci.api.history import (
    TREND_WINDOW,
    ExportFormat,
    HistoryFilter,
    TrendQuery,
    TrendView,
    export_measurements,
    list_runs,
    moved_since,
    noise_estimates,
    open_store,
    since_cutoff,
    trend_view,
)
from perfci.cli.app import OutputFormat, app, consoles, emit, guard, history_app, note, project_settings
from perfci.cli.options import DbOpt, FmtOpt, PatternOpt
from perfci.compare.history_noise import MIN_RUNS
from perfci.metrics.registry import LATENCY
from perfci.reports.noise import noise_json, noise_table
from perfci.reports.trend_text import runs_json, runs_table, trend_table, trends_json
from perfci.reports.units import format_ratio

Runner = Annotated[str | None, typer.Option(help="Only this runner class.")]
MinEffect = Annotated[float, typer.Option(help="Smallest change worth reporting (0.03 = 3%).")]
Html = Annotated[
    Path | None, typer.Option(help="Also write an HTML trend report here (table, series charts, change points).")
]
Markdown = Annotated[
    Path | None,
    typer.Option(help="Also write a Markdown summary here ('-' for stdout): the cases that got worse, with commits."),
]
Window = Annotated[
    int, typer.Option(min=1, help="Runs: the movers (table and HTML) are change points within each series' latest N.")
]
Branch = Annotated[str | None, typer.Option(help="Only runs of this git branch.")]


class TrendFormat(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"


TrendFmt = Annotated[TrendFormat, typer.Option("--format", help="table, json, or markdown (a digest to post).")]
TrendSince = Annotated[
    str | None,
    typer.Option(help="Only change points at runs started in this window: 7d, 12h, 4w, or since a date (2026-11-25)."),
]
Since = Annotated[str | None, typer.Option(help="Only runs started at or after this ISO date/time (2026-11-01).")]
Until = Annotated[str | None, typer.Option(help="Only runs started up to this ISO date/time (its whole day).")]
Check = Annotated[
    int | None,
    typer.Option(
        min=3,  # a change point has at least 3 runs after it: a smaller window could never fail
        help="Exit 1 when a case got worse at a change point within its latest CHECK runs (a nightly trend gate).",
    ),
]


@history_app.command("prune")
def history_prune(
    keep: Annotated[int, typer.Option(min=1, max=10**9, help="Runs to keep per runner class: the latest ones.")],
    db: DbOpt = None,
    runner: Runner = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would be deleted; delete nothing.")] = False,
) -> None:
    """Delete all but the latest --keep runs of each runner class (a store that grows forever slows trends)."""

    def body() -> int:
        deleted = open_store(project_settings(), db).prune(keep, runner, dry_run)
        verb = "would delete" if dry_run else "deleted"
        for name, n in deleted.items():
            note(f"{name}: {verb} {n} run(s), kept the latest {keep}")
        if not deleted:
            note("the history store has no runs" + (f" of runner {runner}" if runner else ""))
        return 0

    guard(body)


@app.command()
def trend(
    db: DbOpt = None,
    metric: Annotated[str, typer.Option(help="Metric to follow.")] = LATENCY,
    runner: Runner = None, k: PatternOpt = None, min_effect: MinEffect = 0.03, html: Html = None,
    markdown: Markdown = None, check: Check = None, fmt: TrendFmt = TrendFormat.table, window: Window = TREND_WINDOW,
    since: TrendSince = None,
) -> None:  # fmt: skip
    """Per case: the history of a metric and the runs (commits) where it changed (change points)."""

    def body() -> int:
        view = trend_view(project_settings(), db, TrendQuery(metric, runner, k, min_effect, window))
        whole, cutoff = view, since_cutoff(since, datetime.now(UTC)) if since is not None else None
        if cutoff is not None:
            view = replace(view, items=moved_since(view.items, cutoff))
        if fmt is TrendFormat.markdown:  # a digest for an email or a chat message
            text = whole.digest(since, cutoff) if since and cutoff else view.markdown(None)
            consoles()[0].print(text, markup=False, highlight=False, soft_wrap=True)
        else:
            emit(OutputFormat(fmt.value), lambda: trends_json(view.items), lambda: trend_table(view.items, window))
        if html is not None:
            view.write_html(html)
            note(f"trend report: {html}")
        if markdown is not None and str(markdown) == "-":
            consoles()[0].print(view.markdown(html), markup=False, highlight=False, soft_wrap=True)
        elif markdown is not None:
            view.write_markdown(markdown, html)
        return 0 if check is None else trend_gate(view, check)

    guard(body)


def trend_gate(view: TrendView, check: int) -> int:
    """`trend --check N`: name each case that got worse within its latest N runs, and each whose slowdowns below
    the threshold since its last change point add up past it (with the runs that contributed); exit 1 when any."""
    worse = view.worse_within(check)
    for t, s, upgrade in worse:
        note(
            f"{t.runner} {t.case_id}: {t.metric} {format_ratio(s.ratio)} from run {s.run_id} "
            f"(commit {(s.commit or '?')[:10]}, {s.started_at[:10]}"
            + (f"; environment changed there: {upgrade})" if upgrade else ")")
        )
    drifting = view.drifting(check)
    for t, d in drifting:
        steps = ", ".join(f"{s.run_id} ({(s.commit or '?')[:10]}) {format_ratio(s.ratio)}" for s in d.steps)
        note(f"{t.runner} {t.case_id}: {t.metric} {format_ratio(d.total)} in steps below the threshold: {steps}")
    failed = len(worse) + len(drifting)
    note(
        f"{'FAIL' if failed else 'PASS'}: {len(worse)} case(s) got worse within their latest {check} runs, "
        f"{len(drifting)} drifted past the threshold in smaller steps"
    )
    return 1 if failed else 0


@history_app.command("noise")
def history_noise(
    db: DbOpt = None,
    metric: Annotated[str, typer.Option(help="Timed metric.")] = LATENCY,
    runner: Runner = None,
    k: PatternOpt = None,
    min_runs: Annotated[int, typer.Option(min=3, help="Runs since the last change needed for an estimate.")] = MIN_RUNS,
    fmt: FmtOpt = OutputFormat.table,
) -> None:
    """Per case: how much separate runs differ beyond their rounds (the cross-job noise that
    `--history-noise` makes comparisons use), from the runs since the last change point."""

    def body() -> int:
        items = noise_estimates(project_settings(), db, TrendQuery(metric, runner, k), min_runs)
        emit(fmt, lambda: noise_json(items), lambda: noise_table(items, min_runs))
        return 0

    guard(body)


@history_app.command("list")
def history_list(
    db: DbOpt = None, runner: Runner = None, branch: Branch = None, since: Since = None, until: Until = None,
    limit: Annotated[int | None, typer.Option(min=1, help="At most this many runs (the newest).")] = None,
    fmt: FmtOpt = OutputFormat.table,
) -> None:  # fmt: skip
    """The stored runs, newest first: start, runner class, branch, commit, run id and the values stored."""

    def body() -> int:
        items = list_runs(project_settings(), db, HistoryFilter(runner, branch, since, until), limit)
        emit(fmt, lambda: runs_json(items), lambda: runs_table(items))
        return 0

    guard(body)


@history_app.command("export")
def history_export(
    out: Annotated[Path, typer.Option("--out", help="File to write.")],
    export_format: Annotated[ExportFormat, typer.Option("--format", help="csv, or parquet (needs pyarrow).")] = (
        ExportFormat.csv
    ),
    db: DbOpt = None, runner: Runner = None, branch: Branch = None, since: Since = None, until: Until = None,
) -> None:  # fmt: skip
    """Export the stored measurements (one row per run, case and metric) as CSV or Parquet, for pandas."""

    def body() -> int:
        where = HistoryFilter(runner, branch, since, until)
        rows = export_measurements(project_settings(), db, where, export_format, out)
        note(f"exported {rows} row(s) to {out}")
        return 0

    guard(body)
