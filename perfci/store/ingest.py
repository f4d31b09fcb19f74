"""Runs into the history store: each run's rows made once (`prepare_run`, in a worker process when `perfci history
ingest` loads files in parallel), then written in batches inside one transaction, the measurements of a batch in
one bulk statement. Ingesting a run already stored for its runner is a no-op, so a CI job can retry safely.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from perfci.errors import ResultsFormatError
from perfci.format.model import RunResult
from perfci.metrics.definition import MetricRegistry
from perfci.store.retries import writing
from perfci.store.rows import ROW_COLUMNS, PreparedRun, Row, prepare_run
from perfci.store.tables import measurements, runs

BATCH_ROWS = 5_000  # measurements per bulk insert (about one file of 500 cases)

Item = tuple[RunResult | PreparedRun, str]  # a run to store, and its runner class


def _batches(
    items: Iterable[Item], batch_rows: int, registry: MetricRegistry | None = None
) -> Iterator[list[tuple[PreparedRun, str]]]:
    """The runs of `items` prepared (with `registry`'s definitions), in batches of about `batch_rows`
    measurements, read lazily."""
    batch: list[tuple[PreparedRun, str]] = []
    size = 0
    for run, runner in items:
        prepared = run if isinstance(run, PreparedRun) else prepare_run(run, registry)
        batch.append((prepared, runner))
        size += len(prepared.rows)
        if size >= batch_rows:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def ingest_many(
    engine: Engine, items: Iterable[Item], batch_rows: int = BATCH_ROWS, registry: MetricRegistry | None = None
) -> tuple[int, int]:
    """Store runs read from `items` lazily (an iterator of any length: memory holds one batch of about
    `batch_rows` measurements), all in one transaction: a run that fails to load (an exception from `items`)
    leaves the store as it was. Runs already stored are skipped. (added, skipped). Database errors are left to
    the caller (HistoryStore words them)."""
    added = skipped = 0
    with writing(engine) as conn:
        for batch in _batches(items, batch_rows, registry):
            a = _insert_batch(conn, batch)
            added, skipped = added + a, skipped + len(batch) - a
    return added, skipped


def _upsert_of(dialect: str) -> Any:
    """The dialect's INSERT with ON CONFLICT; imported here, not with the module: SQLAlchemy's PostgreSQL dialect
    takes 60 ms to import, a tenth of `perfci history ingest`'s start, and a SQLite store never needs it."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        return postgresql_insert
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert


def _insert_batch(conn: Connection, batch: list[tuple[PreparedRun, str]]) -> int:
    """Insert a batch of runs (those not stored yet) and their measurements with one bulk insert; the runs
    added."""
    stored: set[tuple[str, str]] = set()
    for name in {runner for _, runner in batch}:
        ids = [run.run_id for run, runner in batch if runner == name]
        q = select(runs.c.run_id).where(runs.c.runner == name, runs.c.run_id.in_(ids))
        stored |= {(name, row.run_id) for row in conn.execute(q)}
    added = 0
    pending: list[tuple[int, tuple[Row, ...]]] = []  # each added run's key, and its rows
    dialect_insert = _upsert_of(conn.dialect.name)
    for run, runner in batch:
        if (runner, run.run_id) in stored:
            continue
        stored.add((runner, run.run_id))  # the same run twice in one call is stored once
        if run.refusal:
            raise ResultsFormatError(run.refusal, hint=run.remedy)
        # another process may store the same run at the same moment: its row wins, this one is skipped
        inserted = conn.execute(
            dialect_insert(runs).values(
                run_id=run.run_id, runner=runner, commit=run.commit, branch=run.branch, dirty=run.dirty,
                started_at=run.started_at, finished_at=run.finished_at, fingerprint=run.fingerprint,
            ).on_conflict_do_nothing(index_elements=[runs.c.runner, runs.c.run_id]).returning(runs.c.id)
        ).first()  # fmt: skip
        if inserted is None:
            continue
        pending.append((int(inserted.id), run.rows))
        added += 1
    if pending:
        _bulk_insert(conn, pending)
    return added


_COLUMN_LIST = ", ".join(ROW_COLUMNS)
# a run's rows, the run's key written into the statement (an integer the store assigned): the rows go to the driver
# as they are, with no tuple made per row to prepend the key (70 ms of the 0.9 s that 10,000 case-runs took)
_PLACES = ", ".join("?" * len(ROW_COLUMNS[1:]))
_SQLITE_INSERT = f"INSERT INTO measurements ({_COLUMN_LIST}) VALUES ({{run:d}}, {_PLACES})"
_POSTGRES_COPY = f"COPY measurements ({_COLUMN_LIST}) FROM STDIN"


def _bulk_insert(conn: Connection, pending: list[tuple[int, tuple[Row, ...]]]) -> None:
    """The `measurements` rows of runs (each run's key, and its rows: ROW_COLUMNS but the first) inside the
    caller's transaction: SQLite's executemany and PostgreSQL's COPY straight from the tuples (no per-row
    parameter dicts); another database through SQLAlchemy Core's insert."""
    if conn.dialect.name == "sqlite" and conn.dialect.paramstyle == "qmark":
        for pk, rows in pending:
            conn.exec_driver_sql(_SQLITE_INSERT.format(run=pk), list(rows))  # a list: one parameter set per row
    elif conn.dialect.name == "postgresql" and conn.dialect.driver == "psycopg":
        dbapi_error = conn.dialect.loaded_dbapi.Error
        try:
            with conn.connection.driver_connection.cursor() as cur, cur.copy(_POSTGRES_COPY) as copy:  # type: ignore[union-attr]
                for pk, rows in pending:
                    for row in rows:
                        copy.write_row((pk, *row))
        except dbapi_error as exc:  # the driver's own error (SQLAlchemy did not run it): wrapped as SQLAlchemy would
            raise DBAPIError.instance(_POSTGRES_COPY, None, exc, dbapi_error, dialect=conn.dialect) from exc
    else:
        dicts = [dict(zip(ROW_COLUMNS, (pk, *row), strict=True)) for pk, rows in pending for row in rows]
        conn.execute(insert(measurements), dicts)
