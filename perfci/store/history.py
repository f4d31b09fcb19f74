"""Ingest runs into the history store and read metric series back.

`HistoryStore(url)` opens (and creates) the store: `sqlite:///path/history.db` or
`postgresql+psycopg://user@host/db`. Ingesting the same run twice for a runner is a no-op, so a CI job can
retry safely. A store written by a newer perfci (higher `store_version`) is refused with a clear error; an
older one is upgraded in place (tables.py). A database that holds other tables but no perfci `store_meta` (another
application's file), or whose `store_version` is not a version perfci wrote, is refused before anything is
written into it; an empty database is made a store in one transaction, so another process opening it at the
same moment sees either nothing or the whole store.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Select, create_engine, delete, func, insert, inspect, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import (
    ArgumentError,
    DatabaseError,
    DBAPIError,
    IntegrityError,
    OperationalError,
    ProgrammingError,
    SQLAlchemyError,
)

from perfci.errors import InfrastructureError, ResultsFormatError, UsageError
from perfci.metrics.registry import COMPARABLE, MetricDef, round_values
from perfci.model import CaseResult, CaseStatus, RunResult
from perfci.store.tables import (
    ADDED_IN_2,
    INDEXES_3,
    INDEXES_4,
    STORE_VERSION,
    change_points,
    measurements,
    metadata,
    runs,
    store_meta,
)


@dataclass(frozen=True)
class Point:
    """One stored value of a metric for a case, in time order."""

    run_id: str
    commit: str | None
    started_at: str
    value: float
    low: float | None
    high: float | None
    unit: str = ""  # as stored with the measurement ("s", "B", "x ref", ...)
    rounds: int | None = None  # timed metrics (store version 2): rounds, and mean and sd of the log round values
    log_mean: float | None = None
    log_sd: float | None = None


_NUMBER_FIELDS = ("value", "low", "high", "log_mean", "log_sd")  # Point's numeric fields (value: never None)


def checked_point(case_id: str, metric: str, fields: list[Any]) -> Point:
    """A Point from a stored row, its numbers checked: SQLite keeps any value in any column, so a store edited by
    hand (or written by another tool) can hold text where a number belongs, which used to end `perfci trend` and
    `perfci history noise` in a traceback. UsageError naming the case, metric and run otherwise."""
    point = Point(*fields)
    v, lo, hi, n, lm, ls = fields[3], fields[4], fields[5], fields[7], fields[8], fields[9]
    if (  # the usual row, at a glance (x - x is 0.0 for a finite float only)
        type(v) is float and v - v == 0.0
        and (lo is None or (type(lo) is float and lo - lo == 0.0))
        and (hi is None or (type(hi) is float and hi - hi == 0.0))
        and (n is None or type(n) is int)
        and (lm is None or (type(lm) is float and lm - lm == 0.0))
        and (ls is None or (type(ls) is float and ls - ls == 0.0))
    ):  # fmt: skip
        return point
    for name in _NUMBER_FIELDS:
        v = getattr(point, name)
        if (v is None and name != "value") or (type(v) in (int, float) and math.isfinite(v)):
            continue
        raise UsageError(
            f"the history store holds {v!r} as the {name} of {metric} for {case_id} in run {point.run_id!r}, "
            "which is not a finite number (the store was edited by hand or written by another tool).",
            hint="delete that run from the store, or point --db at another store",
        )
    if point.rounds is not None and type(point.rounds) is not int:
        raise UsageError(
            f"the history store holds {point.rounds!r} as the rounds of {metric} for {case_id} in run "
            f"{point.run_id!r}, which is not a count (the store was edited by hand or written by another tool).",
            hint="delete that run from the store, or point --db at another store",
        )
    return point


@dataclass(frozen=True)
class RunInfo:
    """One stored run (`perfci history list`)."""

    run_id: str
    runner: str
    commit: str | None
    branch: str | None
    dirty: bool | None
    started_at: str
    finished_at: str
    measurements: int = 0  # stored values (case x metric)


@dataclass(frozen=True)
class RunFilter:
    """Which runs a listing or export covers: all of them, or those of a runner class, a branch, and a date range
    (`since` / `until`: ISO dates or times, compared with the run's start; `until` includes its whole day/time)."""

    runner: str | None = None
    branch: str | None = None
    since: str | None = None
    until: str | None = None

    def apply(self, q: Select[Any]) -> Select[Any]:
        if self.runner is not None:
            q = q.where(runs.c.runner == self.runner)
        if self.branch is not None:
            q = q.where(runs.c.branch == self.branch)
        if self.since:
            q = q.where(runs.c.started_at >= self.since)
        if self.until:
            q = q.where(func.substr(runs.c.started_at, 1, len(self.until)) <= self.until)
        return q


# the columns of an export (HistoryStore.measurements_frame): one row per run, case and metric
EXPORT_COLUMNS = (
    "runner", "run_id", "commit", "branch", "started_at", "case_id", "metric", "unit", "direction", "value", "low",
    "high", "rounds", "log_mean", "log_sd",
)  # fmt: skip


BATCH_ROWS = 5_000  # measurements per bulk insert (about one file of 500 cases)

# a `measurements` row as the store writes it: these columns, in this order (plain tuples, no ORM objects)
ROW_COLUMNS = ("run", "case_id", "metric", "unit", "direction", "value", "low", "high", "rounds", "log_mean", "log_sd")
_TIMED = {name: d for name, d in COMPARABLE.items() if d.timed}
_NO_ROUNDS = (None, None, None)


def _round_stats(case: CaseResult, definition: MetricDef | None) -> tuple[int | None, float | None, float | None]:
    """`round_statistics` as a tuple, for a metric's definition (None: not timed)."""
    if definition is None:
        return _NO_ROUNDS
    logs = [math.log(v) for v in round_values(case, definition).values()]
    n = len(logs)
    if n < 2:
        return _NO_ROUNDS
    mean = math.fsum(logs) / n
    return n, mean, math.sqrt(math.fsum([(x - mean) ** 2 for x in logs]) / (n - 1))


def round_statistics(case: CaseResult, metric: str) -> dict[str, float | int | None]:
    """Rounds, mean and sd of the log per-round values of a timed metric (the compare rules' per-round values);
    all None for other metrics or fewer than 2 rounds."""
    rounds, mean, sd = _round_stats(case, _TIMED.get(metric))
    # plain floats: statistics.stdev's exact arithmetic made ingest 4x slower
    return {"rounds": rounds, "log_mean": mean, "log_sd": sd}


Row = tuple[str, str, str, str, float, "float | None", "float | None", "int | None", "float | None", "float | None"]


@dataclass(frozen=True)
class PreparedRun:
    """A run as the store writes it: the values of its `runs` row and its `measurements` rows (ROW_COLUMNS
    without the first, the run's key, which the store assigns). Plain values: made once per run, in a worker
    process when `perfci history ingest` loads files in parallel, and sent to the writing process by pickle.
    `refusal` is why the run cannot be stored (a value that is not finite); it is raised only when the run is
    about to be written, so a run that is already stored is skipped as before."""

    run_id: str
    started_at: str
    finished_at: str
    commit: str | None
    branch: str | None
    dirty: bool | None
    fingerprint: str  # JSON, keys sorted
    rows: tuple[Row, ...]
    refusal: str | None = None


def prepare_run(run: RunResult) -> PreparedRun:
    """The rows of a run (ok cases only), with its metrics' round statistics."""
    rows: list[Row] = []
    refusal = None
    isfinite, timed, ok = math.isfinite, _TIMED.get, CaseStatus.OK
    for c in run.cases:
        if c.status is not ok:
            continue
        case_id = c.id
        for m in c.metrics:
            value, low, high = m.value, m.low, m.high
            if not (isfinite(value) and (low is None or isfinite(low)) and (high is None or isfinite(high))):
                refusal = (
                    f"run {run.run_id}: case {case_id}, metric {m.name}: a value is not a finite number "
                    f"({value}, interval {low}..{high}); the history store takes only finite numbers."
                )
                break
            # as floats: a results file may hold an integer past 64 bits (JSON has no limit), which the columns
            # (double precision) take as a float but SQLite's driver refuses as an integer (found by fuzzing)
            low, high = (None if x is None else float(x) for x in (low, high))
            rows.append(
                (case_id, m.name, m.unit, m.direction.value, float(value), low, high, *_round_stats(c, timed(m.name)))
            )
        if refusal:
            break
    git = run.git
    return PreparedRun(
        run_id=run.run_id, started_at=run.started_at, finished_at=run.finished_at,
        commit=git.commit if git else None, branch=git.branch if git else None, dirty=git.dirty if git else None,
        fingerprint=json.dumps(run.fingerprint, sort_keys=True), rows=() if refusal else tuple(rows), refusal=refusal,
    )  # fmt: skip


def measurement_rows(run: RunResult, run_pk: int) -> list[dict[str, Any]]:
    """The `measurements` rows of a run (ok cases only), as dicts of ROW_COLUMNS."""
    prepared = prepare_run(run)
    if prepared.refusal:
        raise ResultsFormatError(prepared.refusal)
    return [dict(zip(ROW_COLUMNS, (run_pk, *row), strict=True)) for row in prepared.rows]


def in_memory(url: str) -> bool:
    """Whether `url` is an SQLite database in memory (`sqlite://`, `sqlite:///:memory:`), which no later command
    sees; False for anything that is not a database URL (HistoryStore words that)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return False
    return parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:")


def default_url(root: Path) -> str:
    return f"sqlite:///{root / '.perfci' / 'history.db'}"


# Concurrent writers (several CI jobs ingesting into one store): SQLite lets one writer at a time hold the lock,
# and the others wait for it up to SQLITE_BUSY_TIMEOUT_S (its busy handler). A process that meets another one's
# half-made tables or lock retries with back-off, up to RETRIES times (docs/reliability.md).
SQLITE_BUSY_TIMEOUT_S = 60.0
RETRIES = 8
# PostgreSQL: how long to wait for the server to answer a connection (a server that accepts the connection but
# never replies would otherwise hang the command); a URL's own `?connect_timeout=N` wins.
POSTGRES_CONNECT_TIMEOUT_S = 10


def connect_args(url: str) -> dict[str, Any]:
    """The driver's connection settings for a store URL: SQLite's busy timeout; for PostgreSQL through libpq
    (psycopg, psycopg2), a connect timeout unless the URL gives its own."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return {"timeout": SQLITE_BUSY_TIMEOUT_S}
    libpq = parsed.get_backend_name() == "postgresql" and parsed.get_driver_name() in ("psycopg", "psycopg2")
    if libpq and "connect_timeout" not in parsed.query:
        return {"connect_timeout": POSTGRES_CONNECT_TIMEOUT_S}
    return {}


def parse_version(value: str) -> int | None:
    """A `store_version` value as perfci writes it (a positive whole number), or None for anything else."""
    return int(value) if value.isascii() and value.isdigit() and int(value) >= 1 else None


def one_line(exc: object) -> str:
    """A driver's error message on one line (libpq's span several)."""
    return " ".join(str(exc).split())


def _another_writer(exc: SQLAlchemyError) -> bool:
    """Whether an error is what another process writing at the same moment causes: a lock, or tables, a row or
    a key it made a moment before."""
    words = str(exc.orig if isinstance(exc, DBAPIError) else exc).lower()
    return any(w in words for w in ("locked", "busy", "already exists", "duplicate", "unique"))


def _back_off(attempt: int) -> None:
    time.sleep(min(2.0, 0.02 * 2**attempt) * (0.5 + random.random()))


class HistoryStore:
    def __init__(self, url: str, create: bool = True) -> None:
        """Open the store at `url`; `create=False` (commands that only read) refuses a SQLite file that does not
        exist rather than making it, with its folders (fuzzing: a mistyped path listed nothing, exit 0, and left
        an empty store behind)."""
        self.label = self._safe(url)  # for reports and messages: the URL without a password
        if url.startswith("sqlite:///"):
            path = Path(url.removeprefix("sqlite:///"))
            plain = "?" not in url and not str(path).startswith("file:")  # not a URI with options (mode=ro...)
            if not create and plain and not path.exists():
                raise UsageError(
                    f"no history store at {path}.", hint="runs are added with: perfci history ingest RESULTS --db URL"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.engine: Engine = create_engine(url, future=True, connect_args=connect_args(url))
            self._create()
        except ArgumentError:
            raise UsageError(f"{url!r} is not a database URL.", hint="e.g. sqlite:///history.db") from None
        except ImportError as exc:  # a URL whose database driver is not installed (mysql://, postgresql:// = psycopg2)
            raise UsageError(
                f"{self.label}: the database driver is not installed ({exc.name or exc}).",
                hint="perfci supports sqlite:///PATH and postgresql+psycopg://... (pip install 'perfci[postgres]')",
            ) from None
        except OperationalError as exc:
            raise InfrastructureError(f"cannot open the history store {self.label}: {one_line(exc.orig)}") from None
        except DatabaseError as exc:  # reachable, but not a database perfci can use (e.g. a corrupt SQLite file)
            raise UsageError(
                f"{self.label} is not a usable history store: {one_line(exc.orig)}.",
                hint="point --db (or $PERFCI_DB) at one",
            ) from None

    @staticmethod
    def _safe(url: str) -> str:
        """The URL without a password, for messages."""
        if "@" in url and "://" in url:
            scheme, rest = url.split("://", 1)
            creds, host = rest.rsplit("@", 1)
            return f"{scheme}://{creds.split(':', 1)[0]}@{host}"
        return url

    def _create(self) -> None:
        """An empty database made a store, then the store checked (and upgraded), retried while another process
        does the same."""
        for attempt in range(RETRIES):
            try:
                if not self._table_names():
                    self._initialise()
                self._check_version()
                return
            except (OperationalError, IntegrityError, ProgrammingError) as exc:
                if attempt == RETRIES - 1 or not _another_writer(exc):
                    raise
                _back_off(attempt)

    def _table_names(self) -> set[str]:
        """The tables and views of the database (its default schema)."""
        with self.engine.connect() as conn:
            found = inspect(conn)
            return {*found.get_table_names(), *found.get_view_names()}

    def _initialise(self) -> None:
        """Make every table and record the version in one transaction (SQLite: holding the write lock), so
        another process sees an empty database or a whole store, never a half-made one. Nothing is done where
        tables appeared in the meantime (another process made the store, or they are not perfci's:
        _check_version tells)."""
        with self.engine.begin() as conn:
            self._lock_for_write(conn)
            if inspect(conn).get_table_names():
                return
            metadata.create_all(conn)
            conn.execute(insert(store_meta).values(key="store_version", value=str(STORE_VERSION)))

    def _refuse_foreign(self) -> None:
        """Refuse a database that has tables but is not a perfci store: no `store_meta` table of perfci's
        shape (another application's database). Nothing has been written into it."""
        found = inspect(self.engine)
        names = set(found.get_table_names())
        if "store_meta" in names and {"key", "value"} <= {c["name"] for c in found.get_columns("store_meta")}:
            return
        shown = ", ".join(sorted(names)[:3]) + (", ..." if len(names) > 3 else "")
        raise UsageError(
            f"{self.label} is not a perfci history store: it has tables ({shown or 'views'}) but not perfci's "
            "store_meta table; point --db (or $PERFCI_DB) at a perfci store or a new database."
        )

    def _lock_for_write(self, conn: Connection) -> None:
        """SQLite: take the write lock when the transaction begins (BEGIN IMMEDIATE), waiting and retrying while
        another process holds it. A transaction that only took the lock at its first insert could not wait for
        it (SQLite refuses at once a reader that wants to become a writer while another one writes)."""
        if conn.dialect.name != "sqlite":
            return
        for attempt in range(RETRIES):
            try:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                return
            except OperationalError as exc:
                if attempt == RETRIES - 1 or not _another_writer(exc):
                    raise
                _back_off(attempt)

    def _version(self) -> int | None:
        """The store's version; None where `store_meta` has no `store_version` row. A value perfci never writes
        (not a positive whole number) is refused."""
        with self.engine.connect() as conn:
            row = conn.execute(select(store_meta.c.value).where(store_meta.c.key == "store_version")).first()
        if row is None:
            return None
        version = parse_version(str(row[0]))
        if version is None:
            raise UsageError(f"{self.label} is not a usable perfci history store (store_version {row[0]!r}).")
        return version

    def _check_version(self) -> None:
        """Refuse what is not a store of a version this perfci reads; make the tables added without a version
        change where missing; upgrade an older store in place."""
        self._refuse_foreign()
        version = self._version()
        if version is None:  # made by perfci at once with its version (_initialise): not a perfci store
            raise UsageError(
                f"{self.label} is not a perfci history store: its store_meta table has no store_version; point "
                "--db (or $PERFCI_DB) at a perfci store or a new database."
            )
        if version > STORE_VERSION:
            raise UsageError(
                f"the history store has version {version}; this perfci reads up to {STORE_VERSION}.",
                hint="upgrade perfci",
            )
        metadata.create_all(self.engine)  # only what is missing (change_points came without a version change)
        if version < 2:
            self._upgrade_to_2()
        if version < 3:
            self._upgrade_to_3()
        if version < 4:
            self._upgrade_to_4()

    def _upgrade_to_2(self) -> None:
        """Add the version-2 columns in one transaction. Two jobs may upgrade a shared store at once: the one
        that loses the race fails on a column that now exists, finds version 2, and goes on."""
        try:
            with self.engine.begin() as conn:
                for name, sql_type in ADDED_IN_2:
                    conn.execute(text(f"ALTER TABLE measurements ADD COLUMN {name} {sql_type}"))
                conn.execute(update(store_meta).where(store_meta.c.key == "store_version").values(value="2"))
        except SQLAlchemyError as exc:
            if (self._version() or 0) < 2:
                raise InfrastructureError(f"could not upgrade the history store to version 2: {exc}") from None

    def _upgrade_to_3(self) -> None:
        """Index the trend's lookup path (tables.py), in one transaction; idempotent, so two jobs upgrading a
        shared store at once both succeed. A large store takes a while once (about 20 s per 10 million rows)."""
        self._add_indexes(3, INDEXES_3)

    def _upgrade_to_4(self) -> None:
        """The trend's index made covering (tables.py), in one transaction, idempotent as version 3's."""
        self._add_indexes(4, INDEXES_4)

    def _add_indexes(self, version: int, statements: tuple[str, ...]) -> None:
        try:
            with self.engine.begin() as conn:
                for statement in statements:
                    conn.execute(text(statement))
                conn.execute(update(store_meta).where(store_meta.c.key == "store_version").values(value=str(version)))
        except SQLAlchemyError as exc:
            if (self._version() or 0) < version:
                raise InfrastructureError(f"could not upgrade the history store to version {version}: {exc}") from None

    def ingest(self, run: RunResult, runner: str) -> bool:
        """Store a run's metrics (ok cases only). False when this run was already stored for this runner."""
        return self.ingest_many([(run, runner)]) == (1, 0)

    def _insert_batch(self, conn: Connection, batch: list[tuple[RunResult | PreparedRun, str]]) -> tuple[int, int]:
        """Insert a batch of runs (those not stored yet) and their measurements with one bulk insert."""
        stored: set[tuple[str, str]] = set()
        for name in {runner for _, runner in batch}:
            ids = [run.run_id for run, runner in batch if runner == name]
            q = select(runs.c.run_id).where(runs.c.runner == name, runs.c.run_id.in_(ids))
            stored |= {(name, row[0]) for row in conn.execute(q)}
        added = 0
        rows: list[tuple[Any, ...]] = []
        dialect_insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
        for item, runner in batch:
            if (runner, item.run_id) in stored:
                continue
            stored.add((runner, item.run_id))  # the same run twice in one call is stored once
            run = item if isinstance(item, PreparedRun) else prepare_run(item)
            if run.refusal:
                raise ResultsFormatError(run.refusal)
            # another process may store the same run at the same moment: its row wins, this one is skipped
            inserted = conn.execute(
                dialect_insert(runs).values(
                    run_id=run.run_id, runner=runner, commit=run.commit, branch=run.branch, dirty=run.dirty,
                    started_at=run.started_at, finished_at=run.finished_at, fingerprint=run.fingerprint,
                ).on_conflict_do_nothing(index_elements=[runs.c.runner, runs.c.run_id]).returning(runs.c.id)
            ).first()  # fmt: skip
            if inserted is None:
                continue
            pk = inserted[0]
            rows += [(pk, *row) for row in run.rows]
            added += 1
        if rows:
            _bulk_insert(conn, rows)
        return added, len(batch) - added

    def run_fingerprints(self, runner: str) -> list[tuple[str, str, dict[str, Any]]]:
        """(run id, start time, fingerprint) of every run of `runner`, in time order."""
        q = select(runs.c.run_id, runs.c.started_at, runs.c.fingerprint).where(runs.c.runner == runner)
        with self.engine.connect() as conn:
            rows = conn.execute(q.order_by(runs.c.started_at, runs.c.id)).all()
        out = []
        for run_id, started, stored in rows:
            try:
                fp = json.loads(stored)
            except ValueError:
                fp = {}
            out.append((run_id, started, fp if isinstance(fp, dict) else {}))
        return out

    def prune(self, keep: int, runner: str | None = None, dry_run: bool = False) -> dict[str, int]:
        """Delete all but the latest `keep` runs of each runner (or of one), with their measurements, in one
        transaction. Returns runner -> runs deleted (what would be deleted, with `dry_run`)."""
        if keep < 1:
            raise ValueError("keep must be at least 1")
        deleted: dict[str, int] = {}
        try:
            with self.engine.begin() as conn:
                for name in [runner] if runner else self.runners():
                    ids = [
                        row[0]
                        for row in conn.execute(
                            select(runs.c.id)
                            .where(runs.c.runner == name)
                            .order_by(runs.c.started_at.desc(), runs.c.id.desc())
                            .offset(keep)
                        )
                    ]
                    deleted[name] = len(ids)
                    if ids and not dry_run:
                        # measurements first: SQLite does not enforce ON DELETE CASCADE unless asked to
                        conn.execute(delete(measurements).where(measurements.c.run.in_(ids)))
                        conn.execute(delete(runs).where(runs.c.id.in_(ids)))
                        # its cached change points: they would never match again (their series changed)
                        conn.execute(delete(change_points).where(change_points.c.runner == name))
        except SQLAlchemyError as exc:
            raise InfrastructureError(f"could not prune the history store: {exc}") from None
        return deleted

    def runners(self) -> list[str]:
        with self.engine.connect() as conn:
            return [r[0] for r in conn.execute(select(runs.c.runner).distinct().order_by(runs.c.runner))]

    def cases(self, runner: str, metric: str) -> list[str]:
        q = (
            select(measurements.c.case_id)
            .join(runs, measurements.c.run == runs.c.id)
            .where(runs.c.runner == runner, measurements.c.metric == metric)
            .distinct()
            .order_by(measurements.c.case_id)
        )
        with self.engine.connect() as conn:
            return [r[0] for r in conn.execute(q)]

    def series(self, runner: str, case_id: str, metric: str) -> list[Point]:
        return self.all_series(runner, metric, case_id).get(case_id, [])

    def all_series(self, runner: str, metric: str, case_id: str | None = None) -> dict[str, list[Point]]:
        """Case id -> its points of `metric` on `runner` in time order, in one query (all cases, or one).

        The query walks the runner's runs in time order and looks each run's values of `metric` up through the
        (run, metric, case) index; the rows are grouped by case here, which costs less than a sort in SQL. Cases
        come out in name order."""
        q = (
            select(
                measurements.c.case_id,
                runs.c.run_id,
                runs.c.commit,
                runs.c.started_at,
                measurements.c.value,
                measurements.c.low,
                measurements.c.high,
                measurements.c.unit,
                measurements.c.rounds,
                measurements.c.log_mean,
                measurements.c.log_sd,
            )
            .join(runs, measurements.c.run == runs.c.id)
            .where(runs.c.runner == runner, measurements.c.metric == metric)
            .order_by(runs.c.started_at, runs.c.id)
        )
        if case_id is not None:
            q = q.where(measurements.c.case_id == case_id)
        out: dict[str, list[Point]] = {}
        with self.engine.connect() as conn:
            for case, *fields in conn.execute(q):  # positional: Point's field order is the query's
                points = out.get(case)
                if points is None:
                    out[case] = points = []
                points.append(checked_point(case, metric, fields))
        return {case: out[case] for case in sorted(out)}

    def cached_change_points(self, runner: str, metric: str, method: str) -> dict[str, tuple[str, str]]:
        """Case id -> (series digest, result) of the change points cached for `runner`'s `metric` by `method`
        (tables.change_points); empty where the store has none or cannot be read for them."""
        q = select(change_points.c.case_id, change_points.c.series, change_points.c.result).where(
            change_points.c.runner == runner, change_points.c.metric == metric, change_points.c.method == method
        )
        try:
            with self.engine.connect() as conn:
                return {case: (series, result) for case, series, result in conn.execute(q)}
        except SQLAlchemyError:  # a store whose cache table cannot be read: every series is computed
            return {}

    def save_change_points(self, runner: str, metric: str, method: str, entries: dict[str, tuple[str, str]]) -> bool:
        """Cache change points: case id -> (series digest, result), replacing the entries of those cases, in one
        transaction. False where the store cannot be written (a read-only user or file, a lock held past the busy
        timeout): the cache is only a saving, and the trend goes on without it."""
        if not entries:
            return True
        key = (change_points.c.runner == runner) & (change_points.c.metric == metric)
        key &= change_points.c.method == method
        rows = [
            {"runner": runner, "metric": metric, "case_id": case, "method": method, "series": d, "result": r}
            for case, (d, r) in entries.items()
        ]
        try:
            with self.engine.begin() as conn:
                self._lock_for_write(conn)
                cases = list(entries)
                for start in range(0, len(cases), 500):  # bounded IN lists
                    chunk = cases[start : start + 500]
                    conn.execute(delete(change_points).where(key, change_points.c.case_id.in_(chunk)))
                conn.execute(insert(change_points), rows)
        except SQLAlchemyError:
            return False
        return True

    def list_runs(self, where: RunFilter = RunFilter(), limit: int | None = None) -> list[RunInfo]:
        """Runs matching `where`, newest first (at most `limit`), each with its number of stored values."""
        counts = select(measurements.c.run, func.count().label("n")).group_by(measurements.c.run).subquery("counts")
        q = where.apply(
            select(
                runs.c.run_id, runs.c.runner, runs.c.commit, runs.c.branch, runs.c.dirty, runs.c.started_at,
                runs.c.finished_at, func.coalesce(counts.c.n, 0),
            ).outerjoin(counts, counts.c.run == runs.c.id)
        ).order_by(runs.c.started_at.desc(), runs.c.id.desc())  # fmt: skip
        if limit is not None:
            q = q.limit(limit)
        with self.engine.connect() as conn:
            return [RunInfo(*row) for row in conn.execute(q)]

    def export_query(self, where: RunFilter = RunFilter()) -> Select[Any]:
        """The measurements of the runs matching `where`, one row per run, case and metric (EXPORT_COLUMNS),
        in runner, time and case order."""
        cols = [getattr(runs.c, n) if n in runs.c else getattr(measurements.c, n) for n in EXPORT_COLUMNS]
        q = select(*cols).join(runs, measurements.c.run == runs.c.id)
        return where.apply(q).order_by(runs.c.runner, runs.c.started_at, runs.c.id, measurements.c.case_id,
                                       measurements.c.metric)  # fmt: skip

    def measurements_frame(self, where: RunFilter = RunFilter()) -> Any:
        """The store's measurements as a pandas DataFrame (EXPORT_COLUMNS; `started_at` as UTC timestamps)."""
        import pandas as pd  # lazily: importing pandas costs every command half a second

        with self.engine.connect() as conn:
            frame = pd.read_sql(self.export_query(where), conn)
        frame["started_at"] = pd.to_datetime(frame["started_at"], utc=True, format="ISO8601")
        return frame

    def window(
        self, runner: str, branch: str | None, n: int, metrics: Iterable[str]
    ) -> tuple[list[RunInfo], dict[tuple[str, str], list[Point]]]:
        """The latest `n` runs of `runner` (on `branch`, when given) in time order, and (case, metric) -> their
        points of each of `metrics` (a rolling baseline)."""
        latest = list(reversed(self.list_runs(RunFilter(runner=runner, branch=branch), limit=n)))
        if not latest:
            return [], {}
        ids = select(runs.c.id).where(runs.c.runner == runner, runs.c.run_id.in_([r.run_id for r in latest]))
        q = (
            select(
                measurements.c.case_id, measurements.c.metric, runs.c.run_id, runs.c.commit, runs.c.started_at,
                measurements.c.value, measurements.c.low, measurements.c.high, measurements.c.unit,
                measurements.c.rounds, measurements.c.log_mean, measurements.c.log_sd,
            )
            .join(runs, measurements.c.run == runs.c.id)
            .where(measurements.c.run.in_(ids), measurements.c.metric.in_(list(metrics)))
            .order_by(measurements.c.case_id, measurements.c.metric, runs.c.started_at, runs.c.id)
        )  # fmt: skip
        out: dict[tuple[str, str], list[Point]] = {}
        with self.engine.connect() as conn:
            for case_id, metric, *fields in conn.execute(q):
                out.setdefault((case_id, metric), []).append(checked_point(case_id, metric, fields))
        return latest, out

    def ingest_many(
        self, items: Iterable[tuple[RunResult | PreparedRun, str]], batch_rows: int = BATCH_ROWS
    ) -> tuple[int, int]:
        """Store runs read from `items` lazily (an iterator of any length: memory holds one batch of about
        `batch_rows` measurements), all in one transaction: a run that fails to load (an exception from
        `items`) leaves the store as it was. Runs already stored are skipped. (added, skipped).

        An item is a RunResult, or a PreparedRun (`prepare_run`, done where the run was loaded)."""
        added = skipped = 0
        try:
            with self.engine.begin() as conn:
                self._lock_for_write(conn)
                batch: list[tuple[RunResult | PreparedRun, str]] = []
                size = 0
                for run, runner in items:
                    batch.append((run, runner))
                    size += len(run.rows) if isinstance(run, PreparedRun) else sum(len(c.metrics) for c in run.cases)
                    if size >= batch_rows:
                        a, s = self._insert_batch(conn, batch)
                        added, skipped, batch, size = added + a, skipped + s, [], 0
                if batch:
                    a, s = self._insert_batch(conn, batch)
                    added, skipped = added + a, skipped + s
        except SQLAlchemyError as exc:
            raise InfrastructureError(f"could not write to the history store: {exc}") from None
        return added, skipped


_COLUMN_LIST = ", ".join(ROW_COLUMNS)
_SQLITE_INSERT = f"INSERT INTO measurements ({_COLUMN_LIST}) VALUES ({', '.join('?' * len(ROW_COLUMNS))})"
_POSTGRES_COPY = f"COPY measurements ({_COLUMN_LIST}) FROM STDIN"


def _bulk_insert(conn: Connection, rows: list[tuple[Any, ...]]) -> None:
    """`measurements` rows (tuples of ROW_COLUMNS) in one statement, inside the caller's transaction: SQLite's
    executemany and PostgreSQL's COPY straight from the tuples (no per-row parameter dicts); another database
    through SQLAlchemy Core's insert."""
    if conn.dialect.name == "sqlite" and conn.dialect.paramstyle == "qmark":
        conn.exec_driver_sql(_SQLITE_INSERT, rows)
    elif conn.dialect.name == "postgresql" and conn.dialect.driver == "psycopg":
        with conn.connection.driver_connection.cursor() as cur, cur.copy(_POSTGRES_COPY) as copy:  # type: ignore[union-attr]
            for row in rows:
                copy.write_row(row)
    else:
        conn.execute(insert(measurements), [dict(zip(ROW_COLUMNS, row, strict=True)) for row in rows])
