"""`perfci history ingest|prune|noise`, `perfci trend`: options, printing and exit codes over
perfci.api.history."""

from __future__ import annotations

import re
import sys
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
    measurements_frame,
    moved_since,
    noise_estimates,
    prune,
    since_cutoff,
    trend_view,
)
from perfci.cli.app import OutputFormat, app, consoles, emit, guard, history_app, note, project_settings
from perfci.cli.options import DbOpt, FmtOpt, PatternOpt
from perfci.compare.history_noise import MIN_RUNS
from perfci.errors import UsageError
from perfci.fractions import FRACTION_EXAMPLE, parse_fraction
from perfci.metrics.registry import LATENCY
from perfci.reports.noise import noise_json, noise_table
from perfci.reports.trend_counts import DEFAULT_MIN_EFFECT, RecentSteps, recent_steps
from perfci.reports.trend_text import runs_json, runs_table, trend_markdown, trend_table, trends_json
from perfci.reports.units import format_ratio

Runner = Annotated[str | None, typer.Option(help="Only this runner class.")]
MinEffect = Annotated[
    str, typer.Option(help=f"Smallest change worth reporting: {FRACTION_EXAMPLE}, above 0 and at most 1000%.")
]
Html = Annotated[
    Path | None, typer.Option(help="Also write an HTML trend report here (table, series charts, change points).")
]
Markdown = Annotated[
    Path | None,
    typer.Option(
        help="Also write a Markdown summary here: the cases that got worse, with commits. '-' writes it to stdout "
        "instead of the table (not with --format json or markdown)."
    ),
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
    typer.Option(
        help="Only change points at runs started in this window: 7d, 12h, 4w, or since a date (2026-11-25). "
        "--check still decides on the whole history."
    ),
]
Since = Annotated[
    str | None,
    typer.Option(help="Only runs started at or after this: 7d, 12h, 4w back from now, or an ISO date or time."),
]
Until = Annotated[
    str | None,
    typer.Option(help="Only runs started up to this: 7d, 12h, 4w back from now, or an ISO date/time (its whole day)."),
]
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
        for line in prune(project_settings(), db, keep, runner, dry_run).lines():
            note(line)
        return 0

    guard(body)


@app.command()
def trend(
    db: DbOpt = None,
    metric: Annotated[str, typer.Option(help="Metric to follow.")] = LATENCY,
    runner: Runner = None, k: PatternOpt = None, min_effect: MinEffect = f"{DEFAULT_MIN_EFFECT:.0%}", html: Html = None,
    markdown: Markdown = None, check: Check = None, fmt: TrendFmt = TrendFormat.table, window: Window = TREND_WINDOW,
    since: TrendSince = None,
) -> None:  # fmt: skip
    """Per case: the history of a metric and the runs (commits) where it changed (change points)."""

    def body() -> int:
        summary_out = markdown is not None and str(markdown) == "-"
        if summary_out and fmt is not TrendFormat.table:  # two documents on stdout: neither could be read
            raise UsageError(
                f"--markdown - writes the Markdown summary to stdout, where --format {fmt.value} prints too.",
                hint="write the summary to a file (--markdown summary.md), or leave out --format",
            )
        effect = parse_min_effect(min_effect)
        cutoff = since_cutoff(since, datetime.now(UTC)) if since is not None else None
        whole = trend_view(project_settings(), db, TrendQuery(metric, runner, k, effect, window))
        # the window only filters what is shown: the rows keep the change points in it, while a step too recent
        # to call and the gate (--check) are found on the whole history
        view = replace(whole, items=moved_since(whole.items, cutoff)) if cutoff is not None else whole
        recent = recent_steps(whole.items, cutoff or "", effect)
        out = consoles()[0]
        if fmt is TrendFormat.markdown:  # a digest for an email or a chat message
            text = whole.digest(since, cutoff) if since and cutoff else summary(view, recent, None, since)
            out.print(text, markup=False, highlight=False, soft_wrap=True)
        elif not summary_out:  # with --markdown -, stdout holds the Markdown alone
            emit(
                OutputFormat(fmt.value),
                lambda: trends_json(view.items, recent),
                lambda: trend_table(view.items, window, recent=recent, since=since),
            )
        if html is not None:
            view.write_html(html, recent, since)
            note(f"trend report: {html}")
        if summary_out:
            out.print(summary(view, recent, html, since), markup=False, highlight=False, soft_wrap=True)
        elif markdown is not None:
            view.write_summary(markdown, summary(view, recent, html, since))
        return 0 if check is None else trend_gate(whole, check)

    guard(body)


def parse_min_effect(text: str) -> float:
    """`--min-effect`: a fraction as every threshold is written (`3%` or `0.03`, perfci/fractions.py); its bounds
    (above 0, at most 10) are the API's (TrendQuery)."""
    try:
        return parse_fraction(text)
    except ValueError as exc:
        raise UsageError(
            f"--min-effect must be a fraction above 0 and at most 10 ({FRACTION_EXAMPLE}), not {text!r}.",
            hint=str(exc),
        ) from None


def summary(view: TrendView, recent: RecentSteps, report: Path | None, since: str | None) -> str:
    """The Markdown summary (`--markdown`, `--format markdown` without `--since`) of `view`: its rows called as the
    table calls them (`recent`), its title naming the `--since` window the rows were cut to."""
    return trend_markdown(
        view.items, view.environment(), report=str(report) if report else None, since=since, recent=recent
    )


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
        items = list_runs(project_settings(), db, run_filter(runner, branch, since, until), limit)
        emit(fmt, lambda: runs_json(items), lambda: runs_table(items))
        return 0

    guard(body)


@history_app.command("export")
def history_export(
    out: Annotated[Path, typer.Option("--out", help="File to write ('-' for stdout: CSV only).")],
    export_format: Annotated[ExportFormat, typer.Option("--format", help="csv, or parquet (needs pyarrow).")] = (
        ExportFormat.csv
    ),
    db: DbOpt = None, runner: Runner = None, branch: Branch = None, since: Since = None, until: Until = None,
) -> None:  # fmt: skip
    """Export the stored measurements (one row per run, case and metric) as CSV or Parquet, for pandas."""

    def body() -> int:
        to_stdout = str(out) == "-"
        if to_stdout and export_format is ExportFormat.parquet:
            raise UsageError("--out - writes to stdout, and Parquet is binary.", hint="--out FILE, or --format csv")
        where = run_filter(runner, branch, since, until)
        if to_stdout:
            frame = measurements_frame(project_settings(), db, where)
            frame.to_csv(sys.stdout, index=False)
            sys.stdout.flush()
            rows = len(frame)
        else:
            rows = export_measurements(project_settings(), db, where, export_format, out)
        note(f"exported {rows} row(s) to {'stdout' if to_stdout else out}")
        return 0

    guard(body)


_SPAN = re.compile(r"[0-9]+[hdw]")  # 12h, 7d, 4w: as `perfci trend --since` takes them


def run_filter(runner: str | None, branch: str | None, since: str | None, until: str | None) -> HistoryFilter:
    """`history list` and `export`'s filter. `--since` and `--until` take what `perfci trend --since` takes: a span
    back from now (7d, 12h, 4w) becomes the UTC time it starts at, in the form the store keeps; a date or time is
    passed on as given (the API checks it; `--until` a date keeps its whole day)."""
    now = datetime.now(UTC)

    def point(text: str | None) -> str | None:
        if text is None or not _SPAN.fullmatch(text.strip().lower()):
            return text
        return since_cutoff(text, now).removesuffix("Z")  # 2026-11-25T12:00:00, compared as text with the store's

    return HistoryFilter(runner, branch, point(since), point(until))
