"""The history store as library calls: ingest, prune, trends, the trend gate, cross-job noise."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from perfci.api.select import compile_patterns
from perfci.api.settings import Settings
from perfci.compare.history_noise import MIN_RUNS, NoiseEstimate, estimate_noise
from perfci.errors import UsageError
from perfci.metrics.registry import COMPARABLE
from perfci.model import RunResult
from perfci.patterns import CasePattern
from perfci.reports.trend import trend_markdown
from perfci.reports.trend_html import write_trend_html
from perfci.schema import load_results
from perfci.store.history import HistoryStore, RunFilter, RunInfo
from perfci.store.movers import DEFAULT_WINDOW, pct_of_peak
from perfci.store.trend import Drift, Shift, Trend, drift, environment_changes, trends


def open_store(settings: Settings, db: str | None) -> HistoryStore:
    return HistoryStore(settings.store_url(db))


PRELOAD_FILES = 4  # read before the store is opened


def ingest(settings: Settings, results: list[Path], db: str | None, runner: str | None) -> tuple[int, int]:
    """Add results files to the store; (added, skipped). Files are read one at a time as the store takes them
    (bounded memory), all in one transaction: a file that is not a complete, valid results file stores nothing.
    The first files are read before the store is opened, so a bad one among them leaves no store behind."""

    def load(path: Path) -> tuple[RunResult, str]:
        run = load_results(path)
        if run.settings.get("complete") is False:
            raise UsageError(
                f"{path}: the run did not complete (interrupted); the history keeps whole runs only.",
                hint="re-run it, or compare it directly with 'perfci compare'",
            )
        return run, settings.runner_class(runner, run.fingerprint)

    first = [load(p) for p in results[:PRELOAD_FILES]]
    rest = (load(p) for p in results[PRELOAD_FILES:])
    return open_store(settings, db).ingest_many(itertools.chain(first, rest))


def list_runs(settings: Settings, db: str | None, where: RunFilter, limit: int | None = None) -> list[RunInfo]:
    """`perfci history list`: the stored runs matching `where`, newest first."""
    return open_store(settings, db).list_runs(where, limit)


def measurements_frame(settings: Settings, db: str | None, where: RunFilter | None = None) -> Any:
    """The store's measurements as a pandas DataFrame: one row per run, case and metric (runner, run_id,
    commit, branch, started_at, case_id, metric, unit, direction, value, low, high, rounds, log_mean, log_sd)."""
    return open_store(settings, db).measurements_frame(where or RunFilter())


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


@dataclass(frozen=True)
class TrendView:
    store: HistoryStore
    query: TrendQuery
    items: list[Trend]

    def environment(self) -> dict[tuple[str, str], str]:
        """(runner, run id) -> the environment change (upgrade) first seen in that run."""
        return environment_changes({r: self.store.run_fingerprints(r) for r in sorted({t.runner for t in self.items})})

    def write_html(self, path: Path) -> None:
        metric, patterns = self.query.metric, compile_patterns(self.query.patterns)
        runners = sorted({t.runner for t in self.items})
        noise = {
            (e.runner, e.case_id): e
            for r in runners
            for e in estimate_noise(self.store, r, metric, patterns, items=self.items).values()
        }
        fingerprints = {r: self.store.run_fingerprints(r) for r in runners}
        peaks = pct_of_peak(self.store, self.items)
        write_trend_html(path, self.items, noise, metric, self.store.label, fingerprints, self.query.window, peaks)

    def markdown(self, report: Path | None) -> str:
        return trend_markdown(self.items, self.environment(), report=str(report) if report else None)

    def write_markdown(self, path: Path, report: Path | None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.markdown(report), "utf-8")

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
    store = open_store(settings, db)
    items = read_trends(store, query.metric, query.runner, compile_patterns(query.patterns), query.min_effect)
    return TrendView(store, query, items)


def noise_estimates(
    settings: Settings, db: str | None, query: TrendQuery, min_runs: int = MIN_RUNS
) -> list[NoiseEstimate]:
    """`perfci history noise`: per case, the cross-job noise since its last change point."""
    known = COMPARABLE.get(query.metric)
    if known is not None and not known.timed:
        raise UsageError(
            f"{query.metric} is compared by a tolerance rule, not with a cross-job noise term.",
            hint="use a timed metric, e.g. --metric latency.median",
        )
    view = trend_view(settings, db, TrendQuery(query.metric, query.runner, query.patterns, 0.03))
    patterns = compile_patterns(query.patterns)
    return [
        e
        for r in sorted({t.runner for t in view.items})
        for e in estimate_noise(view.store, r, query.metric, patterns, min_runs, items=view.items).values()
    ]
