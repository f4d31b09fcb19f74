"""Store URLs: what a URL is shown as, where the default store lives, and the driver settings it is opened with.

The errors of opening a store (a URL that is not one, a driver not installed, a server that cannot be reached, a
file that is not a database) become one line each (`opening_errors`), the password never shown.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, OperationalError

from perfci.errors import InfrastructureError, UsageError
from perfci.work_folder import WORK_FOLDER, mark_work_folder

# Concurrent writers (several CI jobs ingesting into one store): SQLite lets one writer at a time hold the lock,
# and the others wait for it up to SQLITE_BUSY_TIMEOUT_S (its busy handler); contention.py retries past that.
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
    path.parent.mkdir(parents=True, exist_ok=True)
    mark_work_folder(path)


def one_line(exc: object) -> str:
    """A driver's error message on one line (libpq's span several)."""
    return " ".join(str(exc).split())


@contextmanager
def opening_errors(url: str, label: str) -> Iterator[None]:
    """Opening the store at `url` (shown as `label`): its failures as perfci's errors, one line each."""
    try:
        yield
    except ArgumentError:
        raise UsageError(f"{url!r} is not a database URL.", hint="e.g. sqlite:///history.db") from None
    except ImportError as exc:  # a URL whose database driver is not installed (mysql://, postgresql:// = psycopg2)
        raise UsageError(
            f"{label}: the database driver is not installed ({exc.name or exc}).",
            hint="perfci supports sqlite:///PATH and postgresql+psycopg://... (pip install 'perfci[postgres]')",
        ) from None
    except OperationalError as exc:
        raise InfrastructureError(f"cannot open the history store {label}: {one_line(exc.orig)}") from None
    except DatabaseError as exc:  # reachable, but not a database perfci can use (e.g. a corrupt SQLite file)
        raise UsageError(
            f"{label} is not a usable history store: {one_line(exc.orig)}.", hint="point --db (or $PERFCI_DB) at one"
        ) from None
