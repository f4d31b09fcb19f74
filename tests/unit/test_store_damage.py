"""A history store that fails after it opened: a SQLite file damaged past its header (the audit's `dd` of random
bytes into a good store), and a PostgreSQL store whose tables went wrong. Every command and library call that
reads or writes it ends in one perfci error line, with the exit code of an unusable store (2), never a traceback
and exit 1 (which a nightly gate reads as a regression), and never the SQL or its parameters."""

from __future__ import annotations

import os
import random
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from perfci.cli import app
from perfci.errors import PerfciError, UsageError
from perfci.format.schema import dump_results
from perfci.store.history import HistoryStore, Point, RunFilter
from perfci.store.movers import pct_of_peak
from perfci.store.trend import Trend, trends
from tests.conftest import make_case, make_run
from tests.store_cases import history_runs

RUNNER = "cpu-test"
MALFORMED = "is not a usable history store: database disk image is malformed."
# what SQLAlchemy's rendering of an error adds, and what a run's fingerprint holds: none of it may be shown
LEAKS = ("SELECT", "INSERT", "DELETE", "[SQL", "[parameters", "sqlalche.me", "Traceback", "cpu_model", "test cpu")


def _store(path: Path, runs: int = 12) -> str:
    url = f"sqlite:///{path}"
    HistoryStore(url).ingest_many((r, RUNNER) for r in history_runs(runs, step_at=99))
    return url


def _damage_past_the_header(path: Path) -> None:
    """Every page but the first (the header and the schema) and those of `store_meta` overwritten: the store still
    opens (its version is readable) and every query of its runs or measurements meets a malformed page."""
    with sqlite3.connect(path) as conn:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        count = conn.execute("PRAGMA page_count").fetchone()[0]
        meta = {r[0] for r in conn.execute("SELECT rootpage FROM sqlite_master WHERE tbl_name = 'store_meta'")}
    conn.close()
    with path.open("r+b") as f:
        for number in range(2, count + 1):
            if number not in meta:
                f.seek((number - 1) * page)
                f.write(b"\xff" * page)


def _error_lines(stderr: str) -> str:
    """The error line of a refusal (then at most a hint); nothing that names the statement or its parameters."""
    lines = stderr.strip().splitlines()
    assert lines and lines[0].startswith("error: "), stderr
    assert all(line.startswith("hint: ") for line in lines[1:]), stderr
    assert not [leak for leak in LEAKS if leak in stderr], stderr
    return lines[0]


@pytest.fixture
def damaged(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A damaged store's URL, and a candidate results file of its runner (the store's latest run, at another id)."""
    path = tmp_path / "history.db"
    url = _store(path)
    cand = tmp_path / "cand.json"
    dump_results(replace(history_runs(12, step_at=99)[-1], run_id="cand"), cand)
    _damage_past_the_header(path)
    yield url, cand


def test_every_command_on_a_damaged_store_is_one_error_line_exit_2(damaged: tuple[str, Path], tmp_path: Path) -> None:
    url, cand = damaged
    out = tmp_path / "export.csv"
    commands = [
        ["trend"],
        ["trend", "--check", "3"],
        ["history", "list"],
        ["history", "noise"],
        ["history", "export", "--out", str(out)],
        ["history", "prune", "--keep", "3"],
        ["history", "prune", "--keep", "3", "--dry-run"],
        ["history", "ingest", str(cand), "--runner", RUNNER],
        ["compare", str(cand), "--baseline", "store:main", "--runner", RUNNER],
    ]
    for args in commands:
        res = CliRunner().invoke(app, [*args, "--db", url])
        assert res.exit_code == 2, (args, res.output, res.exception)
        assert _error_lines(res.stderr) == f"error: {url} {MALFORMED}", args
    assert not out.exists()


def test_every_library_call_on_a_damaged_store_raises_a_perfci_error(damaged: tuple[str, Path]) -> None:
    url, _ = damaged
    store = HistoryStore(url)  # the header and the store's version are intact: it opens
    run = history_runs(13, step_at=99)[-1]
    point = Point("run-11", "c011", run.started_at, 1e-3, None, None, "s")
    calls = {
        "runners": store.runners,
        "cases": lambda: store.cases(RUNNER, "latency.median"),
        "all_series": lambda: store.all_series(RUNNER, "latency.median"),
        "series": lambda: store.series(RUNNER, "t.alpha[n=8]@cpu", "latency.median"),
        "list_runs": lambda: store.list_runs(RunFilter(runner=RUNNER)),
        "window": lambda: store.window(RUNNER, "main", 10, ["latency.median"]),
        "run_fingerprints": lambda: store.run_fingerprints(RUNNER),
        "measurements_frame": store.measurements_frame,
        "prune": lambda: store.prune(3),
        "ingest": lambda: store.ingest(run, RUNNER),
        "trends": lambda: trends(store, runner=RUNNER),
        "pct_of_peak": lambda: pct_of_peak(store, [Trend(RUNNER, "t.alpha[n=8]@cpu", "latency.median", (point,), ())]),
    }
    for name, call in calls.items():
        with pytest.raises(PerfciError) as raised:
            call()
        err = raised.value
        assert isinstance(err, UsageError) and err.exit_code == 2, name
        assert err.message == f"{url} {MALFORMED}", name
        assert not [leak for leak in LEAKS if leak in str(err)], name
    # the change-point cache is only a saving: unreadable, it is empty; unwritable, it is skipped
    assert store.cached_change_points(RUNNER, "latency.median", "m") == {}
    assert store.save_change_points(RUNNER, "latency.median", "m", {"t.alpha[n=8]@cpu": ("d", "[]")}) is False


def test_the_audit_repro_random_bytes_past_the_header(tmp_path: Path) -> None:
    """The audit's `dd if=/dev/urandom of=m2.db bs=1 seek=40960 count=3000 conv=notrunc` on a good store (seeded
    here): each command answers, or refuses with one line and exit 2; none ends in a traceback or exit 1 (the
    history holds no slowdown, so exit 1 could only be a misreading)."""
    path = tmp_path / "m2.db"
    url = _store(path, runs=28)
    assert path.stat().st_size > 40960 + 3000
    with path.open("r+b") as f:
        f.seek(40960)
        f.write(random.Random(2).randbytes(3000))
    cand = tmp_path / "cand.json"
    dump_results(make_run([make_case("alpha", 1e-3, seed=500), make_case("beta", 2e-3, seed=500)], "cand"), cand)
    refused = 0
    for args in (
        ["trend"],
        ["trend", "--check", "3"],
        ["history", "list"],
        ["history", "noise"],
        ["history", "export", "--out", str(tmp_path / "x.csv")],
        ["compare", str(cand), "--baseline", "store:main", "--runner", RUNNER],
        ["history", "prune", "--keep", "3"],
    ):
        res = CliRunner().invoke(app, [*args, "--db", url])
        assert res.exit_code in (0, 2), (args, res.output, res.exception)
        if res.exit_code == 2:
            refused += 1
            assert "is not a usable history store" in _error_lines(res.stderr), args
    assert refused  # the damage is read by some of them (export reads every page)


# --- PostgreSQL: a store that opens, then fails -----------------------------------------------------------------

PG_URL = os.environ.get("PERFCI_TEST_POSTGRES_URL")


@pytest.fixture
def pg_schema_url() -> Iterator[str]:
    """A URL whose connections work in a new, empty schema (dropped afterwards), as tests/integration's."""
    if not PG_URL:
        if os.environ.get("PERFCI_REQUIRE_POSTGRES"):
            pytest.fail("PERFCI_REQUIRE_POSTGRES is set but PERFCI_TEST_POSTGRES_URL is not")
        pytest.skip("no PostgreSQL server (set PERFCI_TEST_POSTGRES_URL)")
    schema = f"t_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{PG_URL}{'&' if '?' in PG_URL else '?'}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def test_a_postgres_store_that_fails_after_opening_is_one_line_password_masked(pg_schema_url: str) -> None:
    url = pg_schema_url
    store = HistoryStore(url)
    store.ingest_many((r, RUNNER) for r in history_runs(3, step_at=99))
    password = sa.engine.make_url(url).password
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # COPY of a run's rows now fails, its text quoting the row (the values)
        conn.execute(sa.text("ALTER TABLE measurements ADD CONSTRAINT no_rows CHECK (value < 0) NOT VALID"))
    with pytest.raises(UsageError) as raised:
        store.ingest(history_runs(4, step_at=99)[-1], RUNNER)
    message = str(raised.value)
    assert "is not a usable history store" in message and 'violates check constraint "no_rows"' in message
    assert not [leak for leak in (*LEAKS, "COPY", "DETAIL", "Failing row") if leak in message], message
    assert store.label in message and f":{password}@" not in message  # the password masked, as the label has it
    assert len(store.list_runs()) == 3  # nothing of the refused run was kept
    with engine.begin() as conn:  # a store whose table was altered by hand: every read of it fails
        conn.execute(sa.text("ALTER TABLE measurements RENAME COLUMN value TO v"))
    engine.dispose()
    res = CliRunner().invoke(app, ["trend", "--db", url])
    assert res.exit_code == 2, res.output
    line = _error_lines(res.stderr)
    assert line == f"error: {store.label} is not a usable history store: column measurements.value does not exist."
    assert f":{password}@" not in res.stderr and "***" in res.stderr
