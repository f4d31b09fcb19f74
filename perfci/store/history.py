"""The history store: ingest runs, read metric series back.

`HistoryStore(url)` opens (and creates) the store: `sqlite:///path/history.db` or
`postgresql+psycopg://user@host/db`. The work is done by topic: opening and upgrading the store (migrate.py,
connect.py), writing runs (ingest.py), reading them (queries.py), pruning and the change-point cache (upkeep.py),
the retries where several processes share a store (retries.py). The names other packages use are importable
from here.

Every call that reaches the database does so inside `errors()`: whatever the database raises (a store damaged
past its header, a lock held past the wait, a lost connection) leaves as one perfci error line
(connect.store_errors), never a traceback or an exit code that reads as a regression.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Select, create_engine
from sqlalchemy.engine import Engine

from perfci.format.model import RunResult
from perfci.store import ingest as _ingest
from perfci.store import queries, upkeep
from perfci.store.connect import (
    POSTGRES_CONNECT_TIMEOUT_S,
    check_url,
    connect_args,
    default_url,
    in_memory,
    opening_errors,
    sqlite_folder,
    store_errors,
    store_label,
)
from perfci.store.ingest import BATCH_ROWS, Item
from perfci.store.migrate import open_store, parse_version
from perfci.store.records import ALL_RUNS, EXPORT_COLUMNS, Point, RunFilter, RunInfo
from perfci.store.rows import PreparedRun, prepare_run
from perfci.store.upkeep import Pruned

__all__ = [
    "EXPORT_COLUMNS",
    "POSTGRES_CONNECT_TIMEOUT_S",
    "HistoryStore",
    "Point",
    "PreparedRun",
    "Pruned",
    "RunFilter",
    "RunInfo",
    "check_url",
    "connect_args",
    "default_url",
    "in_memory",
    "parse_version",
    "prepare_run",
]


class HistoryStore:
    def __init__(self, url: str, create: bool = True) -> None:
        """Open the store at `url`; `create=False` (commands that only read) refuses a SQLite file that does not
        exist rather than making it, with its folders."""
        self.label = store_label(url)  # for reports and messages: the password masked
        sqlite_folder(url, create)
        with opening_errors(url, self.label):
            self.engine: Engine = create_engine(url, future=True, connect_args=connect_args(url))
            open_store(self.engine, self.label)

    @contextmanager
    def errors(self, doing: str = "read") -> Iterator[None]:
        """Around a use of the database (`doing`: "read", "write to"): its errors as one perfci error line."""
        with store_errors(self.label, doing):
            yield

    def ingest(self, run: RunResult, runner: str) -> bool:
        """Store a run's metrics (ok cases only). False when this run was already stored for this runner."""
        return self.ingest_many([(run, runner)]) == (1, 0)

    def ingest_many(self, items: Iterable[Item], batch_rows: int = BATCH_ROWS) -> tuple[int, int]:
        """Store runs read from `items` lazily, all in one transaction; runs already stored are skipped. (added,
        skipped). An item is a RunResult, or a PreparedRun (`prepare_run`, done where the run was loaded), with
        its runner class (ingest.ingest_many)."""
        with self.errors("write to"):
            return _ingest.ingest_many(self.engine, items, batch_rows)

    def run_fingerprints(self, runner: str) -> list[tuple[str, str, dict[str, Any]]]:
        """(run id, start time, fingerprint) of every run of `runner`, in time order."""
        with self.errors():
            return queries.run_fingerprints(self.engine, runner)

    def prune(self, keep: int, runner: str | None = None, dry_run: bool = False) -> dict[str, int]:
        """Delete all but the latest `keep` runs of each runner (or of one), with their measurements, in one
        transaction. Returns runner -> runs deleted (what would be deleted, with `dry_run`), for the runners
        that have runs (none for a `runner` without any)."""
        return {p.runner: p.deleted for p in self.prune_runs(keep, runner, dry_run)}

    def prune_runs(self, keep: int, runner: str | None = None, dry_run: bool = False) -> list[Pruned]:
        """`prune`, with the runs kept of each runner too."""
        with self.errors("prune"):
            return upkeep.prune(self.engine, keep, [runner] if runner else queries.runners(self.engine), dry_run)

    def runners(self) -> list[str]:
        with self.errors():
            return queries.runners(self.engine)

    def cases(self, runner: str, metric: str) -> list[str]:
        with self.errors():
            return queries.cases(self.engine, runner, metric)

    def series(self, runner: str, case_id: str, metric: str) -> list[Point]:
        return self.all_series(runner, metric, case_id).get(case_id, [])

    def all_series(self, runner: str, metric: str, case_id: str | None = None) -> dict[str, list[Point]]:
        """Case id -> its points of `metric` on `runner` in time order (all cases, or one), cases in name order."""
        with self.errors():
            return queries.all_series(self.engine, runner, metric, case_id)

    def cached_change_points(self, runner: str, metric: str, method: str) -> dict[str, tuple[str, str]]:
        """Case id -> (series digest, result) of the change points cached for `runner`'s `metric` by `method`."""
        return upkeep.cached_change_points(self.engine, runner, metric, method)

    def save_change_points(self, runner: str, metric: str, method: str, entries: dict[str, tuple[str, str]]) -> bool:
        """Cache change points (case id -> (series digest, result)); False where the store cannot be written, or
        another process holds its write lock past upkeep.CACHE_LOCK_WAIT_S."""
        return upkeep.save_change_points(self.engine, runner, metric, method, entries)

    def list_runs(self, where: RunFilter = ALL_RUNS, limit: int | None = None) -> list[RunInfo]:
        """Runs matching `where`, newest first (at most `limit`), each with its number of stored values."""
        with self.errors():
            return queries.list_runs(self.engine, where, limit)

    def export_query(self, where: RunFilter = ALL_RUNS) -> Select[Any]:
        """The measurements of the runs matching `where`, one row per run, case and metric (EXPORT_COLUMNS)."""
        return queries.export_query(where)

    def measurements_frame(self, where: RunFilter = ALL_RUNS) -> Any:
        """The store's measurements as a pandas DataFrame (EXPORT_COLUMNS; `started_at` as UTC timestamps)."""
        with self.errors():
            return queries.measurements_frame(self.engine, where)

    def window(
        self, runner: str, branch: str | None, n: int, metrics: Iterable[str]
    ) -> tuple[list[RunInfo], dict[tuple[str, str], list[Point]]]:
        """The latest `n` runs of `runner` (on `branch`, when given) in time order, and (case, metric) -> their
        points of each of `metrics` (a rolling baseline)."""
        with self.errors():
            return queries.window(self.engine, runner, branch, n, metrics)
