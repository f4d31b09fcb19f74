"""Several processes on one store (CI jobs ingesting at the same moment): which errors another writer causes, and
the retries with back-off that get past them (docs/reliability.md). A write waits for another writer's lock up to
one deadline in all (connect.SQLITE_BUSY_TIMEOUT_S unless the caller gives a shorter wait), however many retries
that takes: SQLite's busy handler waits within each attempt, and is given only what is left of the deadline.

An error is told by the driver's code, not its words: SQLite's result code (`sqlite_errorcode`, Python 3.11+) and
PostgreSQL's SQLSTATE (`sqlstate` in psycopg, `pgcode` in psycopg2).
"""

from __future__ import annotations

import itertools
import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, ProgrammingError, SQLAlchemyError

from perfci.store import connect

T = TypeVar("T")

RETRIES = 8  # attempts at most, with a growing back-off between them

# SQLite: the lock is held (BUSY: by another connection; LOCKED: a table, by a connection sharing the cache), or
# a row another process inserted first violates a unique key (a primary key counts as one)
_SQLITE_RETRIED = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
_SQLITE_UNIQUE = frozenset({sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY})
# PostgreSQL: a row, table, index, column or schema that another process made a moment before
_POSTGRES_RETRIED = frozenset({"23505", "42P07", "42710", "42701", "42P06"})
# the errors a retried step may meet from another writer (anything else is raised at once)
RETRIED_TYPES = (OperationalError, IntegrityError, ProgrammingError)


def another_writer(exc: BaseException) -> bool:
    """Whether an error is what another process writing at the same moment causes: a lock, or tables, a row or a
    key it made a moment before."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        if code & 0xFF in _SQLITE_RETRIED or code in _SQLITE_UNIQUE:
            return True
        return code == sqlite3.SQLITE_ERROR and _sqlite_already_exists(orig)
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    return state in _POSTGRES_RETRIED


def _sqlite_already_exists(orig: object) -> bool:
    """SQLite reports a table or index that already exists with its generic result code (SQLITE_ERROR, as for a
    syntax error), so its message is the only sign of it; this is the one error told by its words."""
    return "already exists" in str(orig)


def back_off(attempt: int, deadline: float) -> None:
    """Sleep before the next attempt: growing with `attempt`, jittered, never past `deadline` (time.monotonic)."""
    pause = min(2.0, 0.02 * 2**attempt) * (0.5 + random.random())
    time.sleep(max(0.0, min(pause, deadline - time.monotonic())))


def deadline_after(wait_s: float | None) -> float:
    """The time (time.monotonic) a wait of `wait_s` ends; None: the busy timeout, the documented wait."""
    return time.monotonic() + (connect.SQLITE_BUSY_TIMEOUT_S if wait_s is None else wait_s)


def retried(step: Callable[[], T], deadline: float | None = None) -> T:
    """`step`'s result, trying again (after a back-off) while it fails because of another writer, up to RETRIES
    times in all and not past `deadline` (time.monotonic; None: the busy timeout from now); any other error, or
    the last one, is raised."""
    end = deadline_after(None) if deadline is None else deadline
    for attempt in itertools.count():
        try:
            return step()
        except RETRIED_TYPES as exc:
            if not another_writer(exc) or attempt + 1 >= RETRIES or time.monotonic() >= end:
                raise
            back_off(attempt, end)
    raise AssertionError("unreachable")  # itertools.count() never ends


def _busy_timeout(conn: Connection, seconds: float) -> None:
    """SQLite: how long this connection's statements wait for a lock (its busy handler), from now on."""
    conn.exec_driver_sql(f"PRAGMA busy_timeout = {max(0, round(seconds * 1000))}")


def lock_for_write(conn: Connection, deadline: float) -> None:
    """SQLite: take the write lock when the transaction begins (BEGIN IMMEDIATE), waiting and retrying while
    another process holds it, until `deadline` (time.monotonic) in all: each attempt's busy handler waits only
    what is left of it. A transaction that only took the lock at its first insert could not wait for it (SQLite
    refuses at once a reader that wants to become a writer while another one writes)."""

    def attempt() -> None:
        _busy_timeout(conn, deadline - time.monotonic())
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    retried(attempt, deadline)


@contextmanager
def writing(engine: Engine, wait_s: float | None = None) -> Iterator[Connection]:
    """A transaction that writes, committed when the block ends (rolled back on an error). SQLite: it holds the
    write lock from its start, waiting for another writer `wait_s` at most in all (None: the busy timeout,
    connect.SQLITE_BUSY_TIMEOUT_S); its statements and its commit wait for a lock up to `wait_s` each too (a
    commit waits for the readers of the moment). The connection's own busy timeout is put back afterwards."""
    with engine.connect() as conn:
        if conn.dialect.name != "sqlite":
            with conn.begin():
                yield conn
            return
        wait = connect.SQLITE_BUSY_TIMEOUT_S if wait_s is None else wait_s
        before = conn.exec_driver_sql("PRAGMA busy_timeout").scalar()  # milliseconds
        conn.commit()  # the read above began SQLAlchemy's transaction (no lock is held: nothing was read)
        try:
            with conn.begin():
                lock_for_write(conn, deadline_after(wait))
                _busy_timeout(conn, wait)
                yield conn
        finally:
            try:
                _busy_timeout(conn, (before if isinstance(before, int) else 0) / 1000)
                conn.commit()
            except SQLAlchemyError:  # a connection that failed (a damaged file): not given back to the pool
                conn.invalidate()
