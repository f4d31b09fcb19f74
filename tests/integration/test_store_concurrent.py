"""Concurrent writers: several processes ingest into one history store (a SQLite file, and PostgreSQL when
PERFCI_TEST_POSTGRES_URL is set) at the same time, starting on an empty store, with overlapping runs. Every run
must be stored exactly once, with all its measurements: nothing lost, nothing duplicated (docs/reliability.md)."""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
import os
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa

from perfci.format.model import RunResult
from perfci.store.history import HistoryStore
from tests.conftest import make_case, make_run
from tests.integration.test_store_postgres import fresh_schema

pytestmark = pytest.mark.integration

RUNNER = "concurrent-runner"


def _run(i: int) -> RunResult:
    stamp = f"2026-11-01T00:{i // 60:02d}:{i % 60:02d}.000000Z"
    run = make_run([make_case("alpha", 1e-3, rounds=2, seed=i), make_case("beta", 2e-3, rounds=2, seed=i)], f"r{i:04d}")
    return replace(run, started_at=stamp, finished_at=stamp)


def _writer(url: str, ids: list[int], batch: bool, start: multiprocessing.synchronize.Barrier) -> None:
    runs = [_run(i) for i in ids]
    start.wait()
    store = HistoryStore(url)  # every writer opens (and may create) the store at the same moment
    if batch:
        store.ingest_many((run, RUNNER) for run in runs)
    else:
        for run in runs:
            store.ingest(run, RUNNER)
    store.engine.dispose()


def ingest_concurrently(url: str, writers: int, per_writer: int, overlap: int) -> set[int]:
    """`writers` processes, each ingesting `per_writer` runs; consecutive writers share `overlap` runs. Odd
    writers ingest one run per transaction, even ones all their runs in one (batched) call."""
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(writers)
    step = per_writer - overlap
    plans = [list(range(w * step, w * step + per_writer)) for w in range(writers)]
    procs = [ctx.Process(target=_writer, args=(url, ids, w % 2 == 0, start)) for w, ids in enumerate(plans)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0] * writers
    return {i for ids in plans for i in ids}


def check_exactly_once(url: str, expected: set[int]) -> None:
    store = HistoryStore(url)
    with store.engine.connect() as conn:
        ids = [r[0] for r in conn.execute(sa.text("SELECT run_id FROM runs WHERE runner = :r"), {"r": RUNNER})]
        per_run = dict(
            conn.execute(
                sa.text(
                    "SELECT r.run_id, COUNT(*) FROM measurements m JOIN runs r ON m.run = r.id "
                    "WHERE r.runner = :r GROUP BY r.run_id"
                ),
                {"r": RUNNER},
            ).all()
        )
    store.engine.dispose()
    assert len(ids) == len(set(ids)), "a run was stored twice"
    assert set(ids) == {f"r{i:04d}" for i in expected}, "a run was lost"
    want = sum(len(c.metrics) for c in _run(0).cases)
    assert set(per_run.values()) == {want}, "a run's measurements were lost or duplicated"


def test_concurrent_ingest_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'history.db'}"
    check_exactly_once(url, ingest_concurrently(url, writers=4, per_writer=5, overlap=2))


def test_concurrent_ingest_sqlite_two_writers_200_runs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'history.db'}"
    check_exactly_once(url, ingest_concurrently(url, writers=2, per_writer=200, overlap=50))


def _pg_url() -> str:
    url = os.environ.get("PERFCI_TEST_POSTGRES_URL")
    if not url:
        if os.environ.get("PERFCI_REQUIRE_POSTGRES"):
            pytest.fail("PERFCI_REQUIRE_POSTGRES is set but PERFCI_TEST_POSTGRES_URL is not")
        pytest.skip("no PostgreSQL server (set PERFCI_TEST_POSTGRES_URL)")
    return url


@pytest.mark.parametrize(("writers", "per_writer", "overlap"), [(4, 5, 2), (2, 200, 50)])
def test_concurrent_ingest_postgres(writers: int, per_writer: int, overlap: int) -> None:
    with fresh_schema(_pg_url()) as url:
        check_exactly_once(url, ingest_concurrently(url, writers, per_writer, overlap))
