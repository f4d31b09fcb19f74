"""The history store as library calls: ingest, prune, trends, the trend gate, cross-job noise."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfci.api.settings import Settings
from perfci.compare.history_noise import MIN_RUNS, NoiseEstimate, estimate_noise
from perfci.errors import UsageError
from perfci.format.jsonfile import write_text_atomic
from perfci.metrics.registry import default_registry
from perfci.patterns import CasePattern
from perfci.reports.trend_counts import RecentSteps
from perfci.reports.trend_html import write_trend_html
from perfci.reports.trend_text import trend_digest, trend_markdown
from perfci.store.movers import DEFAULT_WINDOW, pct_of_peak, window_moves
from perfci.store.records import RunFilter
from perfci.store.trend import Drift, Shift, Trend, drift, environment_changes, trends

if TYPE_CHECKING:  # the store imports SQLAlchemy: when a command opens it, not at every command's start
    from perfci.store.history import HistoryStore, Pruned, RunInfo


def open_store(settings: Settings, db: str | None, create: bool = True) -> HistoryStore:
    """The history store; `create=False` for commands that only read (a missing SQLite file is refused)."""
    from perfci.store.history import HistoryStore

    return HistoryStore(settings.store_url(db), create)


@dataclass(frozen=True)
class PruneOutcome:
    """`perfci history prune`: per runner class with runs, how many were deleted and kept (with `dry_run`: would
    be); none where the store (or `runner`) has no runs."""

    keep: int
    runner: str | None
    dry_run: bool
    pruned: list[Pruned]

    def lines(self) -> list[str]:
        """What the command says, one line per runner class: the runs deleted and the runs kept, counted ("kept 1"
        where fewer than --keep were stored), in the conditional for a dry run; or that there are no runs."""
        if not self.pruned:
            return ["the history store has no runs" + (f" of runner {self.runner}" if self.runner else "")]
        delete, keep = ("would delete", "would keep") if self.dry_run else ("deleted", "kept")
        return [
            f"{p.runner}: {delete} {p.deleted} run(s), {keep} {'the latest ' if p.deleted else ''}{p.kept}"
            for p in self.pruned
        ]


def prune(
    settings: Settings, db: str | None, keep: int, runner: str | None = None, dry_run: bool = False
) -> PruneOutcome:
    """`perfci history prune`: delete all but the latest `keep` runs of each runner class (or of `runner`), with
    their measurements, in one transaction; with `dry_run`, only count them."""
    return PruneOutcome(keep, runner, dry_run, open_store(settings, db, create=False).prune_runs(keep, runner, dry_run))


# `--since` / `--until`: an ISO date, or a date and time, in the form the store keeps (runs are filtered by
# comparing the start times as text, so 20261101 or 2026-11-1 would compare wrongly)
_ISO_PREFIX = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}(:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?)?)?Z?")


def checked_filter(where: RunFilter) -> RunFilter:
    """`where` when its dates are ISO dates or times; UsageError otherwise (`--since garbage` listed
    nothing and `--until garbage` exported everything, without a word)."""
    for flag, value in (("--since", where.since), ("--until", where.until)):
        if value is None:
            continue
        valid = _ISO_PREFIX.fullmatch(value) is not None
        if valid:
            try:
                datetime.fromisoformat(value[:10])
            except ValueError:
                valid = False
        if not valid:
            raise UsageError(f"{flag} {value!r} is not an ISO date or time.", hint=f"e.g. {flag} 2026-11-01")
    return where


def list_runs(settings: Settings, db: str | None, where: RunFilter, limit: int | None = None) -> list[RunInfo]:
    """`perfci history list`: the stored runs matching `where`, newest first."""
    return open_store(settings, db, create=False).list_runs(checked_filter(where), limit)


def measurements_frame(settings: Settings, db: str | None, where: RunFilter | None = None) -> Any:
    """The store's measurements as a pandas DataFrame: one row per run, case and metric (runner, run_id,
    commit, branch, started_at, case_id, metric, unit, direction, value, low, high, rounds, log_mean, log_sd)."""
    return open_store(settings, db, create=False).measurements_frame(checked_filter(where or RunFilter()))


HistoryFilter = RunFilter  # for callers above the store (the CLI): runner, branch, since, until
TREND_WINDOW = DEFAULT_WINDOW  # runs: the default window of the movers (`perfci trend --window`)


class ExportFormat(StrEnum):
    csv = "csv"
    parquet = "parquet"


def export_measurements(settings: Settings, db: str | None, where: RunFilter, fmt: ExportFormat, out: Path) -> int:
    """`perfci history export`: write the measurements to `out` as CSV or Parquet; the number of rows."""
    frame = measurements_frame(settings, db, where)
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt is ExportFormat.csv:
        frame.to_csv(out, index=False)
    else:
        try:
            import pyarrow  # noqa: F401  (pandas' Parquet engine)
        except ImportError:
            raise UsageError(
                "Parquet export needs pyarrow, which is not installed.", hint="pip install 'perfci[parquet]'"
            ) from None
        frame.to_parquet(out, index=False)
    return len(frame)


def read_trends(
    store: HistoryStore, metric: str, runner: str | None, patterns: tuple[CasePattern, ...], min_effect: float = 0.03
) -> list[Trend]:
    """The selected trends; none is a usage error with the remedy."""
    items = trends(store, metric, runner, patterns, min_effect)
    if not items:
        try:
            default_registry().comparable(metric)
        except ValueError as exc:  # a mistyped name: the store was not the problem
            raise UsageError(f"--metric: {exc}.") from None
        raise UsageError(
            f"the history store has no values of {metric!r} for the selected cases.",
            hint="add runs with 'perfci history ingest RESULTS.json'",
        )
    return items


@dataclass(frozen=True)
class TrendQuery:
    metric: str
    runner: str | None = None
    patterns: list[str] | None = None
    min_effect: float = 0.03
    window: int = DEFAULT_WINDOW  # runs: the movers overview covers change points within each series' latest ones

    def __post_init__(self) -> None:
        if not 0.0 < self.min_effect <= 10.0:  # False for NaN (NaN or inf made `trend --check` pass)
            raise UsageError(
                f"--min-effect must be a fraction above 0 and at most 10 (0.03 is 3%), not {self.min_effect!r}."
            )


@dataclass(frozen=True)
class TrendView:
    store: HistoryStore
    query: TrendQuery
    items: list[Trend]

    def environment(self) -> dict[tuple[str, str], str]:
        """(runner, run id) -> the environment change (upgrade) first seen in that run."""
        return environment_changes({r: self.store.run_fingerprints(r) for r in sorted({t.runner for t in self.items})})

    def write_html(self, path: Path, recent: RecentSteps | None = None, since: str | None = None) -> None:
        """The trend report; `recent`: the steps too recent to call, as the table calls them (found on the whole
        history, at the query's --min-effect), so that the page and the table agree; `since`: the `--since`
        window the items were cut to, named in its title."""
        from perfci.api.select import compile_patterns  # here: it imports the workloads (numpy); ingest needs none

        metric, patterns = self.query.metric, compile_patterns(self.query.patterns)
        runners = sorted({t.runner for t in self.items})
        noise = {
            (e.runner, e.case_id): e
            for r in runners
            for e in estimate_noise(self.store, r, metric, patterns, items=self.items).values()
        }
        fingerprints = {r: self.store.run_fingerprints(r) for r in runners}
        peaks = pct_of_peak(self.store, self.items)
        write_trend_html(path, self.items, noise, metric, self.store.label, fingerprints, self.query.window, peaks,
                         recent=recent, since=since)  # fmt: skip

    def markdown(self, report: Path | None, since: str | None = None) -> str:
        return trend_markdown(self.items, self.environment(), report=str(report) if report else None, since=since)

    def digest(self, since: str, cutoff: str) -> str:
        """`trend --format markdown --since`: what moved in the runs started at or after `cutoff`."""
        moves, steady, quiet = window_moves(self.items, cutoff, self.query.min_effect)
        return trend_digest(moves, steady, quiet, since, self.query.metric, self.environment())

    def write_summary(self, path: Path, text: str) -> None:
        """`--markdown FILE`: the summary written (its folder made)."""
        write_text_atomic(path, text)

    def worse_within(self, runs: int) -> list[tuple[Trend, Shift, str | None]]:
        """The trend gate: cases that got worse at a change point within their latest `runs` runs, each with the
        environment change seen at that run (or None)."""
        env = self.environment()
        return [(t, s, env.get((t.runner, s.run_id))) for t in self.items if (s := t.worse_within(runs)) is not None]

    def drifting(self, runs: int) -> list[tuple[Trend, Drift]]:
        """The trend gate's second half: cases whose slowdowns below the threshold (`min_effect`) since their last
        change point add up past it, the latest of them within their latest `runs` runs (store/trend.drift)."""
        out = []
        for t in self.items:
            d = drift(t, self.query.min_effect)
            if d is not None and d.steps[-1].index >= len(t.points) - runs:
                out.append((t, d))
        return out


def trend_view(settings: Settings, db: str | None, query: TrendQuery) -> TrendView:
    from perfci.api.select import compile_patterns

    store = open_store(settings, db, create=False)
    items = read_trends(store, query.metric, query.runner, compile_patterns(query.patterns), query.min_effect)
    return TrendView(store, query, items)


def noise_estimates(
    settings: Settings, db: str | None, query: TrendQuery, min_runs: int = MIN_RUNS
) -> list[NoiseEstimate]:
    """`perfci history noise`: per case, the cross-job noise since its last change point."""
    known = default_registry().get(query.metric)
    if known is not None and known.comparable and not known.timed:
        raise UsageError(
            f"{query.metric} is compared by a tolerance rule, not with a cross-job noise term.",
            hint="use a timed metric, e.g. --metric latency.median",
        )
    from perfci.api.select import compile_patterns

    view = trend_view(settings, db, TrendQuery(query.metric, query.runner, query.patterns, 0.03))
    patterns = compile_patterns(query.patterns)
    return [
        e
        for r in sorted({t.runner for t in view.items})
        for e in estimate_noise(view.store, r, query.metric, patterns, min_runs, items=view.items).values()
    ]


_UNITS_S = {"h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}


def since_cutoff(text: str, now: datetime) -> str:
    """`--since` of `perfci trend`: a span back from `now` (`12h`, `7d`, `4w`) or an ISO date, as the UTC time the
    store keeps (`2026-11-25T00:00:00Z`); UsageError otherwise."""
    raw = text.strip().lower()
    if raw[:-1].isdigit() and raw[-1:] in _UNITS_S:
        start = now - timedelta(seconds=int(raw[:-1]) * _UNITS_S[raw[-1]])
    else:
        try:
            start = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(
                f"--since {text!r}: expected a span such as 7d, 12h or 4w, or a date (2026-11-25)."
            ) from None
        start = start if start.tzinfo else start.replace(tzinfo=UTC)
    return start.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def moved_since(items: list[Trend], cutoff: str) -> list[Trend]:
    """The trends with only the change points at runs started at or after `cutoff` (what moved in the window)."""
    return [replace(t, shifts=tuple(s for s in t.shifts if s.started_at >= cutoff)) for t in items]
