"""Hostile history stores (found by fuzzing the CLI): a PostgreSQL server that accepts the connection and never
answers, a `store_version` that is not a version, another application's SQLite file. Each is one error line and
the right exit code, and nothing is written into a database that is not a perfci store."""

from __future__ import annotations

import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.cli import app
from perfci.errors import InfrastructureError, UsageError
from perfci.store.connect import store_label
from perfci.store.history import POSTGRES_CONNECT_TIMEOUT_S, HistoryStore, connect_args, parse_version
from perfci.store.retries import another_writer
from perfci.store.tables import STORE_VERSION, UPGRADES


def _invoke(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args))
    return res.exit_code, res.stderr


def _one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


# --- a PostgreSQL server that never answers --------------------------------------------------------------------


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A local TCP listener that accepts connections and never sends a byte; yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:  # the accept timed out: look at `stop` again
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        listener.close()


def test_postgres_gets_a_connect_timeout_unless_the_url_sets_one() -> None:
    assert connect_args("postgresql+psycopg://u@db.example/perf") == {"connect_timeout": POSTGRES_CONNECT_TIMEOUT_S}
    assert connect_args("postgresql+psycopg://u@db.example/perf?connect_timeout=3") == {}  # the URL's own wins
    assert connect_args("sqlite:///h.db") == {"timeout": 60.0}


def test_a_silent_postgres_server_is_one_error_line_exit_3(silent_server: int) -> None:
    pytest.importorskip("psycopg")
    url = f"postgresql+psycopg://u@127.0.0.1:{silent_server}/db?connect_timeout=2"  # libpq's least: 2 s
    start = time.monotonic()
    code, stderr = _invoke("history", "list", "--db", url)
    assert time.monotonic() - start < 15
    assert code == 3, stderr
    line = _one_error_line(stderr)
    assert "cannot open the history store" in line and "timeout" in line
    with pytest.raises(InfrastructureError):
        HistoryStore(url)


def test_a_store_label_masks_the_password_only() -> None:
    assert store_label("postgresql+psycopg://ci:s3cr%40t@db.example:5433/perf?connect_timeout=3") == (
        "postgresql+psycopg://ci:***@db.example:5433/perf?connect_timeout=3"
    )
    for url in ("postgresql+psycopg://ci@db/perf", "sqlite:////tmp/a b@c:d/h.db", "sqlite://", "not a url"):
        assert store_label(url) == url  # nothing to hide: as given (a SQLite path keeps its spelling)


# --- errors another writer causes, told by the driver's codes ------------------------------------------------------


def _sqlite_error(sql: str, setup: str = "CREATE TABLE t (x PRIMARY KEY); INSERT INTO t VALUES (1)") -> Exception:
    conn = sqlite3.connect(":memory:")
    conn.executescript(setup)
    try:
        conn.execute(sql)
    except sqlite3.Error as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError(f"{sql} did not fail")


class _PgError(Exception):
    def __init__(self, sqlstate: str, message: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


def test_errors_of_another_writer_are_told_by_their_codes(tmp_path: Path) -> None:
    assert another_writer(_sqlite_error("INSERT INTO t VALUES (1)"))  # a primary key another process took
    assert another_writer(_sqlite_error("CREATE TABLE t (y)"))  # SQLITE_ERROR: told by its words
    assert not another_writer(_sqlite_error("SELECT * FROM locked_busy_unique"))  # no such table, whatever it says
    assert not another_writer(_sqlite_error("INSERT INTO t VALUES (NULL)", "CREATE TABLE t (x NOT NULL)"))
    path = tmp_path / "busy.db"
    holder, waiter = sqlite3.connect(path, isolation_level=None), sqlite3.connect(path, timeout=0)
    holder.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlite3.OperationalError) as busy:
        waiter.execute("BEGIN IMMEDIATE")
    holder.close()
    waiter.close()
    assert another_writer(busy.value)
    for state in ("23505", "42P07", "42710"):  # a unique key, a table, an index another process made
        assert another_writer(_PgError(state, "..."))
    assert not another_writer(_PgError("42601", 'syntax error at or near "locked": duplicate, already exists'))


def test_upgrade_steps_go_one_version_at_a_time_up_to_this_one() -> None:
    assert [step.version for step in UPGRADES] == list(range(2, STORE_VERSION + 1))
    assert all(step.statements for step in UPGRADES)


# --- a store_version that is not a version -----------------------------------------------------------------------


def test_parse_version() -> None:
    assert [parse_version(v) for v in ("1", "4", "12")] == [1, 4, 12]
    assert [parse_version(v) for v in ("abc", "", "2.5", "-1", "0", " 4", "٣", "1e3")] == [None] * 8


@pytest.mark.parametrize("value", ["abc", "", "2.5", "-1", "0"])
def test_a_store_version_that_is_not_a_version_is_refused(tmp_path: Path, value: str) -> None:
    path = tmp_path / "h.db"
    HistoryStore(f"sqlite:///{path}").engine.dispose()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE store_meta SET value = ? WHERE key = 'store_version'", (value,))
    conn.close()
    before = path.read_bytes()
    for command in (["history", "list"], ["trend"]):
        code, stderr = _invoke(*command, "--db", f"sqlite:///{path}")
        assert code == 2, stderr
        assert f"not a usable perfci history store (store_version {value!r})" in _one_error_line(stderr)
    assert path.read_bytes() == before
    with pytest.raises(UsageError):
        HistoryStore(f"sqlite:///{path}")


# --- another application's database ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        "CREATE TABLE runs (x TEXT)",  # a table of perfci's name, not perfci's
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('keep me')",
        "CREATE TABLE store_meta (a INTEGER)",  # a store_meta of another shape
        "CREATE TABLE store_meta (key TEXT, value TEXT); INSERT INTO store_meta VALUES ('owner', 'someone else')",
        "CREATE TABLE t (x); CREATE VIEW v AS SELECT 1",
    ],
)
def test_another_applications_database_is_refused_untouched(tmp_path: Path, schema: str) -> None:
    path = tmp_path / "foreign.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(schema)
    conn.close()
    tables, before = _tables(path), path.read_bytes()
    for command in (["trend"], ["history", "list"]):
        code, stderr = _invoke(*command, "--db", f"sqlite:///{path}")
        assert code == 2, stderr
        assert "is not a perfci history store" in _one_error_line(stderr)
    with pytest.raises(UsageError, match="not a perfci history store"):
        HistoryStore(f"sqlite:///{path}")
    assert _tables(path) == tables and path.read_bytes() == before  # nothing written into it


def test_a_store_missing_its_store_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    HistoryStore(f"sqlite:///{path}").engine.dispose()
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM store_meta WHERE key = 'store_version'")
    conn.close()
    code, stderr = _invoke("history", "list", "--db", f"sqlite:///{path}")
    assert code == 2 and "has no store_version" in _one_error_line(stderr)


@pytest.mark.parametrize("how", ["zero bytes", "no tables"])
def test_an_empty_database_is_made_a_store(tmp_path: Path, how: str) -> None:
    path = tmp_path / "empty.db"
    if how == "zero bytes":
        path.touch()
    else:
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA user_version = 7")  # a database file with a header and nothing in it
        conn.close()
    code, stderr = _invoke("history", "list", "--db", f"sqlite:///{path}")
    assert code == 0, stderr
    assert {"store_meta", "runs", "measurements", "change_points"} <= _tables(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM store_meta WHERE key = 'store_version'").fetchall() == [("5",)]
    conn.close()


def test_stores_opened_at_once_on_a_new_file_all_open(tmp_path: Path) -> None:
    """Several openers of one new file at the same moment: one makes the store, the others find it whole (none
    takes it for another application's database)."""
    url = f"sqlite:///{tmp_path / 'new.db'}"
    start = threading.Barrier(6)
    errors: list[BaseException] = []

    def open_store() -> None:
        start.wait()
        try:
            HistoryStore(url).engine.dispose()
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    with sqlite3.connect(tmp_path / "new.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM store_meta").fetchone() == (1,)
    conn.close()


# --- a store edited by hand: text where a number belongs -------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "value", "said"),
    [
        ("value", "'abc'", "'abc' as the value"),
        ("low", "'x'", "'x' as the low"),
        ("rounds", "'y'", "'y' as the rounds"),
    ],
)
def test_a_stored_value_that_is_not_a_number_is_one_error_line(
    tmp_path: Path, column: str, value: str, said: str
) -> None:
    """SQLite keeps text in a REAL column: `perfci trend` and `perfci history noise` ended in a traceback."""
    from tests.conftest import make_case, make_run

    path = tmp_path / "h.db"
    url = f"sqlite:///{path}"
    store = HistoryStore(url)
    for i in range(3):
        store.ingest(make_run([make_case("a", 1e-3, seed=i)], run_id=f"r{i}"), "x")
    with sqlite3.connect(path) as conn:
        first = conn.execute("SELECT min(id) FROM measurements WHERE metric = 'latency.median'").fetchone()[0]
        conn.execute(f"UPDATE measurements SET {column} = {value} WHERE id = ?", (first,))
    with pytest.raises(UsageError, match=said):
        store.all_series("x", "latency.median")
    for command in (["trend"], ["history", "noise"]):
        code, stderr = _invoke(*command, "--db", url)
        assert code == 2 and "Traceback" not in stderr
        assert stderr.startswith("error: ") and said in stderr.splitlines()[0]
