"""Store URLs: what a URL is shown as, where the default store lives, and the driver settings it is opened with.

The errors of opening a store (a URL that is not one, a driver not installed, a server that cannot be reached, a
file that is not a database) become one line each (`opening_errors`), the password never shown; so do the database
errors of every later operation (`store_errors`, around each of HistoryStore's calls): a store damaged past its
header opens, and fails at its first query. The line holds the driver's own words, never the statement or its
parameters (a run's fingerprint, ids).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError, SQLAlchemyError, StatementError

from perfci.errors import InfrastructureError, PerfciError, UsageError
from perfci.work_folder import WORK_FOLDER, mark_work_folder

# Concurrent writers (several CI jobs ingesting into one store): SQLite lets one writer at a time hold the lock,
# and the others wait for it up to SQLITE_BUSY_TIMEOUT_S in all (its busy handler, and retries.py's retries within
# the same deadline); a statement that waits for a lock waits up to this long too. Read when a store is opened or a
# write begins, so a test may lower it.
SQLITE_BUSY_TIMEOUT_S = 60.0
# PostgreSQL: how long to wait for the server to answer a connection (a server that accepts the connection but
# never replies would otherwise hang the command); a URL's own `?connect_timeout=N` wins.
POSTGRES_CONNECT_TIMEOUT_S = 10


def store_label(url: str) -> str:
    """The URL as reports and messages show it: SQLAlchemy's own rendering with the password masked where it has
    one; as given otherwise (a SQLite path keeps its spelling), and as given where it is not a URL at all (the
    refusal that follows quotes it)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return url
    return url if parsed.password is None else parsed.render_as_string(hide_password=True)


def check_url(url: str) -> None:
    """A store URL's form, database kind and driver, checked without connecting: a gate that measures first and stores
    after refuses a URL that could never work before it measures (`opening_errors`' words)."""
    with opening_errors(url, store_label(url)):
        make_url(url).get_dialect().import_dbapi()  # a driver that is not installed (postgresql+psycopg, mysql)


def in_memory(url: str) -> bool:
    """Whether `url` is an SQLite database in memory (`sqlite://`, `sqlite:///:memory:`), which no later command
    sees; False for anything that is not a database URL (HistoryStore words that)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return False
    return parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:")


def default_url(root: Path) -> str:
    return f"sqlite:///{root / WORK_FOLDER / 'history.db'}"


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


def sqlite_folder(url: str, create: bool) -> None:
    """A SQLite file's folder made (`create`), or a missing file refused (commands that only read: a mistyped
    path used to list nothing, exit 0, and leave an empty store behind). A URI with options (mode=ro...) is
    left to SQLite."""
    if not url.startswith("sqlite:///"):
        return
    path = Path(url.removeprefix("sqlite:///"))
    plain = "?" not in url and not str(path).startswith("file:")
    if not create and plain and not path.exists():
        raise UsageError(
            f"no history store at {path}.", hint="runs are added with: perfci history ingest RESULTS --db URL"
        )
    if plain and path.exists() and not path.is_file():  # a folder, /dev/null: SQLite's words were an I/O error
        kind = "a folder" if path.is_dir() else "not a regular file"
        raise UsageError(f"{path}: {kind}, not a SQLite history store.", hint="point --db at a file")
    path.parent.mkdir(parents=True, exist_ok=True)
    mark_work_folder(path)


def one_line(exc: object) -> str:
    """A driver's error message on one line (libpq's span several)."""
    return " ".join(str(exc).split())


def driver_message(exc: SQLAlchemyError) -> str:
    """What went wrong, in the database's words, on one line: never SQLAlchemy's rendering, which appends the
    statement and its parameters. PostgreSQL: the server's primary message where it sent one (libpq's text adds the
    statement's line and the row's values)."""
    orig = exc.orig if isinstance(exc, StatementError) else None
    if orig is None:  # an error of SQLAlchemy's own, not the driver's
        return one_line(exc.args[0]) if exc.args else type(exc).__name__
    primary = getattr(getattr(orig, "diag", None), "message_primary", None)
    return one_line(primary) if isinstance(primary, str) and primary else one_line(orig)


def store_error(exc: SQLAlchemyError, label: str, failed: str) -> PerfciError:
    """A database error as one perfci error line. A lock held past the wait, a lost connection, a disk that fails
    (OperationalError): InfrastructureError (exit 3), `failed` ("could not read the history store X") and the
    database's words; any other error of the database, such as a file damaged past its header ("database disk
    image is malformed"): the store is not usable (UsageError, exit 2)."""
    if isinstance(exc, DBAPIError) and not isinstance(exc, OperationalError):
        return UsageError(
            f"{label} is not a usable history store: {driver_message(exc)}.", hint="point --db (or $PERFCI_DB) at one"
        )
    return InfrastructureError(f"{failed}: {driver_message(exc)}")


@contextmanager
def store_errors(label: str, doing: str = "read") -> Iterator[None]:
    """A store operation (`doing`: "read", "write to"...) with its database errors as one perfci error line each
    (`store_error`); perfci's own errors pass through."""
    try:
        yield
    except SQLAlchemyError as exc:
        raise store_error(exc, label, f"could not {doing} the history store {label}") from None


@contextmanager
def opening_errors(url: str, label: str) -> Iterator[None]:
    """Opening the store at `url` (shown as `label`): its failures as perfci's errors, one line each."""
    try:
        yield
    except ArgumentError:
        hint = "e.g. sqlite:///history.db or postgresql+psycopg://user@host/db"
        if url.startswith("postgres://"):  # Heroku's and libpq's spelling, which SQLAlchemy does not take
            hint = "write postgresql+psycopg://... for postgres://... (SQLAlchemy's name for it)"
        raise UsageError(f"{label!r} is not a database URL.", hint=hint) from None
    except ImportError as exc:  # a URL whose database driver is not installed (mysql://, postgresql:// = psycopg2)
        raise UsageError(
            f"{label}: the database driver is not installed ({exc.name or exc}).",
            hint="perfci supports sqlite:///PATH and postgresql+psycopg://... (pip install 'perfci[postgres]')",
        ) from None
    except SQLAlchemyError as exc:  # unreachable, or not a database perfci can use (e.g. a corrupt SQLite file)
        raise store_error(exc, label, f"cannot open the history store {label}") from None
