"""Waiting for another writer of a SQLite store: a write waits SQLITE_BUSY_TIMEOUT_S in all (one deadline across its
retries, where each retry used to wait the whole busy timeout again: 8 x 60 s), and a trend that would cache its
change points while another process holds the write lock answers after a short wait, without caching.

The lock is held by a second, real connection (BEGIN IMMEDIATE), and the waits are lowered for the tests through
the module constants the store reads when it opens a connection or begins a write."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from perfci.cli import app
from perfci.errors import InfrastructureError
from perfci.store import connect, upkeep
from perfci.store.history import HistoryStore
from perfci.store.trend import trends
from tests.store_cases import history_runs

RUNNER = "cpu-test"
BUSY_S = 0.5  # the busy timeout of these tests (60 s in use)


@pytest.fixture
def store_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(connect, "SQLITE_BUSY_TIMEOUT_S", BUSY_S)
    url = f"sqlite:///{tmp_path / 'history.db'}"
    HistoryStore(url).ingest_many((r, RUNNER) for r in history_runs(16))
    return url


@pytest.fixture
def held(store_url: str) -> Iterator[sqlite3.Connection]:
    """Another connection holding the store's write lock (as an ingest in another job does) until the test ends,
    or until the test commits it."""
    other = sqlite3.connect(store_url.removeprefix("sqlite:///"), isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield other
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()


def _cached(url: str) -> int:
    with sa.create_engine(url).connect() as conn:
        return int(conn.execute(sa.text("SELECT count(*) FROM change_points")).scalar_one())


def test_a_write_waits_for_another_writer_one_busy_timeout_in_all(store_url: str, held: sqlite3.Connection) -> None:
    store = HistoryStore(store_url)  # opening only reads: a writer's lock does not stop it
    run = history_runs(17)[-1]
    start = time.monotonic()
    with pytest.raises(InfrastructureError) as raised:
        store.ingest(run, RUNNER)
    waited = time.monotonic() - start
    # 8 attempts of a whole busy timeout each, with their back-offs, took about 6.5 s here (8 x 60 s in use)
    assert BUSY_S * 0.9 <= waited < BUSY_S + 1.5
    assert str(raised.value) == f"could not write to the history store {store_url}: database is locked"
    start = time.monotonic()
    res = CliRunner().invoke(app, ["history", "prune", "--keep", "3", "--db", store_url])
    assert res.exit_code == 3 and time.monotonic() - start < BUSY_S + 1.5, res.output
    assert res.stderr.strip() == f"error: could not prune the history store {store_url}: database is locked"
    # a dry run only reads: it answers while the lock is held
    res = CliRunner().invoke(app, ["history", "prune", "--keep", "3", "--dry-run", "--db", store_url])
    assert res.exit_code == 0 and "cpu-test: would delete 13 run(s)" in res.stderr, res.output
    held.execute("ROLLBACK")
    assert store.ingest(run, RUNNER)  # the lock released: the same store writes


def test_a_writer_gets_the_lock_released_within_the_wait(
    store_url: str, held: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connect, "SQLITE_BUSY_TIMEOUT_S", 10.0)
    store = HistoryStore(store_url)
    release = threading.Timer(0.3, lambda: held.execute("COMMIT"))  # the other writer finishes its transaction
    release.start()
    try:
        assert store.ingest(history_runs(17)[-1], RUNNER)
    finally:
        release.join()
    assert len(store.list_runs()) == 17


def test_trend_on_a_locked_store_answers_without_caching(
    store_url: str, held: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/history.md: a store held past the wait "still answers: the cache is skipped". The trend waits
    CACHE_LOCK_WAIT_S, not the busy timeout (of 3 s here: 8 x 3 s before the fix)."""
    monkeypatch.setattr(connect, "SQLITE_BUSY_TIMEOUT_S", 3.0)
    monkeypatch.setattr(upkeep, "CACHE_LOCK_WAIT_S", 0.2)
    assert _cached(store_url) == 0
    store = HistoryStore(store_url)
    start = time.monotonic()
    got = trends(store)
    assert time.monotonic() - start < 2.0
    assert got == trends(store, cache=False) and [len(t.shifts) for t in got] == [1, 0]
    assert _cached(store_url) == 0  # nothing cached: the lock was held
    with store.engine.connect() as conn:  # the short wait was the cache write's only: the connection's is back
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 3000
    start = time.monotonic()
    res = CliRunner().invoke(app, ["trend", "--check", "3", "--db", store_url])
    assert res.exit_code == 0 and time.monotonic() - start < 2.5, res.output
    held.execute("ROLLBACK")
    assert trends(store) == got
    assert _cached(store_url) == 2  # the lock released: both series cached
