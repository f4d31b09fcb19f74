"""Several processes on one store (CI jobs ingesting at the same moment): which errors another writer causes, and
the retries with back-off that get past them (docs/reliability.md).

An error is told by the driver's code, not its words: SQLite's result code (`sqlite_errorcode`, Python 3.11+) and
PostgreSQL's SQLSTATE (`sqlstate` in psycopg, `pgcode` in psycopg2).
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, ProgrammingError

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


def back_off(attempt: int) -> None:
    time.sleep(min(2.0, 0.02 * 2**attempt) * (0.5 + random.random()))


def retried(step: Callable[[], T]) -> T:
    """`step`'s result, trying again (after a back-off) while it fails because of another writer, up to RETRIES
    times in all; any other error, or the last one, is raised."""
    for attempt in range(RETRIES - 1):
        try:
            return step()
        except RETRIED_TYPES as exc:
            if not another_writer(exc):
                raise
            back_off(attempt)
    return step()


def lock_for_write(conn: Connection) -> None:
    """SQLite: take the write lock when the transaction begins (BEGIN IMMEDIATE), waiting and retrying while
    another process holds it. A transaction that only took the lock at its first insert could not wait for it
    (SQLite refuses at once a reader that wants to become a writer while another one writes)."""
    if conn.dialect.name == "sqlite":
        retried(lambda: conn.exec_driver_sql("BEGIN IMMEDIATE"))
