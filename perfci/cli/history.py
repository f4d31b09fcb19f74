"""`perfci history ingest`, `perfci trend`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from perfci.cli.app import DbOpt, OutputFormat, app, consoles, emit, guard, history_app, history_store
from perfci.compare.history_noise import MIN_RUNS, estimate_noise
from perfci.errors import UsageError
from perfci.metrics.registry import COMPARABLE
from perfci.patterns import CasePattern, case_pattern
from perfci.profilers.fingerprint import runner_name
from perfci.reports.noise import noise_json, noise_table
from perfci.reports.trend import trend_markdown, trend_table, trends_json
from perfci.reports.trend_html import write_trend_html
from perfci.reports.units import format_ratio
from perfci.schema import load_results
from perfci.store.history import HistoryStore
from perfci.store.trend import Trend, environment_changes, trends


@history_app.command("ingest")
def history_ingest(
    results: Annotated[list[Path], typer.Argument(help="Results files to add.")],
    db: DbOpt = None,
    runner: Annotated[str | None, typer.Option(help="Runner class (default: $PERFCI_RUNNER or fingerprint).")] = None,
) -> None:
    """Add results files to the history store (a run already stored is skipped)."""

    def body() -> int:
        runs = [load_results(p) for p in results]  # validate every file before writing anything
        partial = [str(p) for p, r in zip(results, runs, strict=True) if r.settings.get("complete") is False]
        if partial:
            raise UsageError(
                f"{', '.join(partial)}: the run did not complete (interrupted); the history keeps whole runs only.",
                hint="re-run it, or compare it directly with 'perfci compare'",
            )
        store = history_store(db)
        items = [(r, runner or os.environ.get("PERFCI_RUNNER") or runner_name(r.fingerprint)) for r in runs]
        added, skipped = store.ingest_many(items)
        _, err = consoles()
        err.print(f"ingested {added} run(s), skipped {skipped} already stored", highlight=False)
        return 0

    guard(body)


@history_app.command("prune")
def history_prune(
    keep: Annotated[int, typer.Option(min=1, help="Runs to keep per runner class: the latest ones.")],
    db: DbOpt = None,
    runner: Annotated[str | None, typer.Option(help="Only this runner class.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would be deleted; delete nothing.")] = False,
) -> None:
    """Delete all but the latest --keep runs of each runner class (a store that grows forever slows trends)."""

    def body() -> int:
        store = history_store(db)
        deleted = store.prune(keep, runner, dry_run)
        _, err = consoles()
        verb = "would delete" if dry_run else "deleted"
        for name, n in deleted.items():
            err.print(f"{name}: {verb} {n} run(s), kept the latest {keep}", highlight=False, markup=False)
        if not deleted:
            err.print("the history store has no runs" + (f" of runner {runner}" if runner else ""), highlight=False)
        return 0

    guard(body)


def read_trends(
    store: HistoryStore, metric: str, runner: str | None, patterns: tuple[CasePattern, ...], min_effect: float = 0.03
) -> list[Trend]:
    """The selected trends; none is a usage error with the remedy."""
    items = trends(store, metric, runner, patterns, min_effect)
    if not items:
        raise UsageError(
            f"the history store has no values of {metric!r} for the selected cases.",
            hint="add runs with 'perfci history ingest RESULTS.json'",
        )
    return items


@app.command()
def trend(
    db: DbOpt = None,
    metric: Annotated[str, typer.Option(help="Metric to follow.")] = "latency.median",
    runner: Annotated[str | None, typer.Option(help="Only this runner class.")] = None,
    k: Annotated[list[str] | None, typer.Option("-k", help="Case pattern (as in perfci run). Repeatable.")] = None,
    min_effect: Annotated[float, typer.Option(help="Smallest change worth reporting (0.03 = 3%).")] = 0.03,
    html: Annotated[
        Path | None, typer.Option(help="Also write an HTML trend report here (table, series charts, change points).")
    ] = None,
    markdown: Annotated[
        Path | None,
        typer.Option(
            help="Also write a Markdown summary here ('-' for stdout): the cases that got worse, with commits."
        ),
    ] = None,
    check: Annotated[
        int | None,
        typer.Option(
            min=3,  # a change point has at least 3 runs after it: a smaller window could never fail
            help="Exit 1 when a case got worse at a change point within its latest CHECK runs (a nightly trend gate).",
        ),
    ] = None,
    fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.table,
) -> None:
    """Per case: the history of a metric and the runs (commits) where it changed (change points)."""

    def body() -> int:
        store = history_store(db)
        patterns = tuple(case_pattern(p) for p in k or ())
        items = read_trends(store, metric, runner, patterns, min_effect)
        emit(fmt, lambda: trends_json(items), lambda: trend_table(items))
        out, err = consoles()
        if html is not None:
            runners = sorted({t.runner for t in items})
            noise = {
                (e.runner, e.case_id): e
                for r in runners
                for e in estimate_noise(store, r, metric, patterns, items=items).values()
            }
            fingerprints = {r: store.run_fingerprints(r) for r in runners}
            write_trend_html(html, items, noise, metric, store.label, fingerprints)
            err.print(f"trend report: {html}", highlight=False)
        env = (
            environment_changes({r: store.run_fingerprints(r) for r in sorted({t.runner for t in items})})
            if markdown is not None or check is not None
            else {}
        )
        if markdown is not None:
            text = trend_markdown(items, env, report=str(html) if html else None)
            if str(markdown) == "-":
                out.print(text, markup=False, highlight=False, soft_wrap=True)
            else:
                markdown.parent.mkdir(parents=True, exist_ok=True)
                markdown.write_text(text, "utf-8")
        if check is None:
            return 0
        worse = [(t, s) for t in items if (s := t.worse_within(check)) is not None]
        for t, s in worse:
            upgrade = env.get((t.runner, s.run_id))
            err.print(
                f"{t.runner} {t.case_id}: {t.metric} {format_ratio(s.ratio)} from run {s.run_id} "
                f"(commit {(s.commit or '?')[:10]}, {s.started_at[:10]}"
                + (f"; environment changed there: {upgrade})" if upgrade else ")"),
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
        err.print(
            f"{'FAIL' if worse else 'PASS'}: {len(worse)} case(s) got worse within their latest {check} runs",
            highlight=False,
        )
        return 1 if worse else 0

    guard(body)


@history_app.command("noise")
def history_noise(
    db: DbOpt = None,
    metric: Annotated[str, typer.Option(help="Timed metric.")] = "latency.median",
    runner: Annotated[str | None, typer.Option(help="Only this runner class.")] = None,
    k: Annotated[list[str] | None, typer.Option("-k", help="Case pattern (as in perfci run). Repeatable.")] = None,
    min_runs: Annotated[int, typer.Option(min=3, help="Runs since the last change needed for an estimate.")] = MIN_RUNS,
    fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.table,
) -> None:
    """Per case: how much separate runs differ beyond their rounds (the cross-job noise that
    `--history-noise` makes comparisons use), from the runs since the last change point."""

    def body() -> int:
        known = COMPARABLE.get(metric)
        if known is not None and not known.timed:
            raise UsageError(
                f"{metric} is compared by a tolerance rule, not with a cross-job noise term.",
                hint="use a timed metric, e.g. --metric latency.median",
            )
        store = history_store(db)
        patterns = tuple(case_pattern(p) for p in k or ())
        found = read_trends(store, metric, runner, patterns)
        items = [
            e
            for r in sorted({t.runner for t in found})
            for e in estimate_noise(store, r, metric, patterns, min_runs, items=found).values()
        ]
        emit(fmt, lambda: noise_json(items), lambda: noise_table(items, min_runs))
        return 0

    guard(body)
