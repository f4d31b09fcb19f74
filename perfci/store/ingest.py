"""Runs into the history store: each run's rows made once (`prepare_run`, in a worker process when `perfci history
ingest` loads files in parallel), then written in batches inside one transaction, the measurements of a batch in
one bulk statement. Ingesting a run already stored for its runner is a no-op, so a CI job can retry safely.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from perfci.errors import InfrastructureError, ResultsFormatError
from perfci.model import RunResult
from perfci.store.contention import lock_for_write
from perfci.store.rows import ROW_COLUMNS, PreparedRun, prepare_run
from perfci.store.tables import measurements, runs

BATCH_ROWS = 5_000  # measurements per bulk insert (about one file of 500 cases)

Item = tuple[RunResult | PreparedRun, str]  # a run to store, and its runner class


def _batches(items: Iterable[Item], batch_rows: int) -> Iterator[list[tuple[PreparedRun, str]]]:
    """The runs of `items` prepared, in batches of about `batch_rows` measurements, read lazily."""
    batch: list[tuple[PreparedRun, str]] = []
    size = 0
    for run, runner in items:
        prepared = run if isinstance(run, PreparedRun) else prepare_run(run)
        batch.append((prepared, runner))
        size += len(prepared.rows)
        if size >= batch_rows:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def ingest_many(engine: Engine, items: Iterable[Item], batch_rows: int = BATCH_ROWS) -> tuple[int, int]:
    """Store runs read from `items` lazily (an iterator of any length: memory holds one batch of about
    `batch_rows` measurements), all in one transaction: a run that fails to load (an exception from `items`)
    leaves the store as it was. Runs already stored are skipped. (added, skipped)."""
    added = skipped = 0
    try:
        with engine.begin() as conn:
            lock_for_write(conn)
            for batch in _batches(items, batch_rows):
                a = _insert_batch(conn, batch)
                added, skipped = added + a, skipped + len(batch) - a
    except SQLAlchemyError as exc:
        raise InfrastructureError(f"could not write to the history store: {exc}") from None
    return added, skipped


def _insert_batch(conn: Connection, batch: list[tuple[PreparedRun, str]]) -> int:
    """Insert a batch of runs (those not stored yet) and their measurements with one bulk insert; the runs
    added."""
    stored: set[tuple[str, str]] = set()
    for name in {runner for _, runner in batch}:
        ids = [run.run_id for run, runner in batch if runner == name]
        q = select(runs.c.run_id).where(runs.c.runner == name, runs.c.run_id.in_(ids))
        stored |= {(name, row.run_id) for row in conn.execute(q)}
    added = 0
    rows: list[tuple[Any, ...]] = []
    dialect_insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    for run, runner in batch:
        if (runner, run.run_id) in stored:
            continue
        stored.add((runner, run.run_id))  # the same run twice in one call is stored once
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
        pk = inserted.id
        rows += [(pk, *row) for row in run.rows]
        added += 1
    if rows:
        _bulk_insert(conn, rows)
    return added


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
