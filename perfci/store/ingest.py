"""Runs into the history store: each run's rows made once (`prepare_run`, in a worker process when `perfci history
ingest` loads files in parallel), then written in batches inside one transaction, the measurements of a batch in
one bulk statement. Ingesting a run already stored for its runner is a no-op, so a CI job can retry safely.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from perfci.errors import InfrastructureError, ResultsFormatError
from perfci.metrics.registry import COMPARABLE, MetricDef, round_values
from perfci.model import CaseResult, CaseStatus, RunResult
from perfci.store.contention import lock_for_write
from perfci.store.tables import measurements, runs

BATCH_ROWS = 5_000  # measurements per bulk insert (about one file of 500 cases)

# a `measurements` row as the store writes it: these columns, in this order (plain tuples, no ORM objects)
ROW_COLUMNS = ("run", "case_id", "metric", "unit", "direction", "value", "low", "high", "rounds", "log_mean", "log_sd")
_TIMED = {name: d for name, d in COMPARABLE.items() if d.timed}
_NO_ROUNDS = (None, None, None)

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


def _round_stats(case: CaseResult, definition: MetricDef | None) -> tuple[int | None, float | None, float | None]:
    """Rounds, and mean and sd of the log per-round values (the compare rules' per-round values) of a metric whose
    definition is given (None: not timed); all None for fewer than 2 rounds. Plain floats: statistics.stdev's
    exact arithmetic made ingest 4x slower."""
    if definition is None:
        return _NO_ROUNDS
    logs = [math.log(v) for v in round_values(case, definition).values()]
    n = len(logs)
    if n < 2:
        return _NO_ROUNDS
    mean = math.fsum(logs) / n
    return n, mean, math.sqrt(math.fsum([(x - mean) ** 2 for x in logs]) / (n - 1))


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
            # (double precision) take as a float but SQLite's driver refuses as an integer
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
