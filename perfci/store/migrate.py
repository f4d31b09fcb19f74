"""Making a database a history store, and taking an older store to this perfci's version.

An empty database is made a store in one transaction, so another process opening it at the same moment sees
either nothing or the whole store. A store of an older version goes through the upgrade steps of tables.UPGRADES
past its version, in order, each in its own transaction. Refused, before anything is written into them: a store
written by a newer perfci (higher `store_version`), a database that holds other tables but no perfci
`store_meta` (another application's file), and a `store_version` that is not a version perfci wrote.
"""

from __future__ import annotations

from sqlalchemy import insert, inspect, select, text, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from perfci.errors import InfrastructureError, UsageError
from perfci.store.connect import driver_message
from perfci.store.retries import retried, writing
from perfci.store.tables import STORE_VERSION, UPGRADES, Upgrade, metadata, store_meta


def parse_version(value: str) -> int | None:
    """A `store_version` value as perfci writes it (a positive whole number), or None for anything else."""
    return int(value) if value.isascii() and value.isdigit() and int(value) >= 1 else None


def open_store(engine: Engine, label: str) -> None:
    """Make an empty database a store, then check (and upgrade) the store, retried while another process does
    the same. `label`: the store as messages name it."""

    def attempt() -> None:
        if not _table_names(engine):
            _initialise(engine)
        _check_version(engine, label)

    retried(attempt)


def _table_names(engine: Engine) -> set[str]:
    """The tables and views of the database (its default schema)."""
    with engine.connect() as conn:
        found = inspect(conn)
        return {*found.get_table_names(), *found.get_view_names()}


def _initialise(engine: Engine) -> None:
    """Make every table and record the version in one transaction (SQLite: holding the write lock), so another
    process sees an empty database or a whole store, never a half-made one. Nothing is done where tables
    appeared in the meantime (another process made the store, or they are not perfci's: _check_version tells)."""
    with writing(engine) as conn:
        if inspect(conn).get_table_names():
            return
        metadata.create_all(conn)
        conn.execute(insert(store_meta).values(key="store_version", value=str(STORE_VERSION)))


def _refuse_foreign(engine: Engine, label: str) -> None:
    """Refuse a database that has tables but is not a perfci store: no `store_meta` table of perfci's shape
    (another application's database). Nothing has been written into it."""
    found = inspect(engine)
    names = set(found.get_table_names())
    if "store_meta" in names and {"key", "value"} <= {c["name"] for c in found.get_columns("store_meta")}:
        return
    shown = ", ".join(sorted(names)[:3]) + (", ..." if len(names) > 3 else "")
    raise UsageError(
        f"{label} is not a perfci history store: it has tables ({shown or 'views'}) but not perfci's "
        "store_meta table; point --db (or $PERFCI_DB) at a perfci store or a new database."
    )


def _version(engine: Engine, label: str) -> int | None:
    """The store's version; None where `store_meta` has no `store_version` row. A value perfci never writes (not
    a positive whole number) is refused."""
    with engine.connect() as conn:
        row = conn.execute(select(store_meta.c.value).where(store_meta.c.key == "store_version")).first()
    if row is None:
        return None
    version = parse_version(str(row.value))
    if version is None:
        raise UsageError(f"{label} is not a usable perfci history store (store_version {row.value!r}).")
    return version


def _check_version(engine: Engine, label: str) -> None:
    """Refuse what is not a store of a version this perfci reads; make the tables added without a version change
    where missing; upgrade an older store in place."""
    _refuse_foreign(engine, label)
    version = _version(engine, label)
    if version is None:  # made by perfci at once with its version (_initialise): not a perfci store
        raise UsageError(
            f"{label} is not a perfci history store: its store_meta table has no store_version; point "
            "--db (or $PERFCI_DB) at a perfci store or a new database."
        )
    if version > STORE_VERSION:
        raise UsageError(
            f"the history store has version {version}; this perfci reads up to {STORE_VERSION}.",
            hint="upgrade perfci",
        )
    metadata.create_all(engine)  # only what is missing (change_points came without a version change)
    for step in UPGRADES:
        if version < step.version:
            _upgrade(engine, label, step)


def _upgrade(engine: Engine, label: str, step: Upgrade) -> None:
    """One upgrade step, in one transaction. Two jobs may upgrade a shared store at once: where a step fails, it is
    an error only if the store did not reach its version after all (the job that loses the race fails on a
    column that now exists, finds the new version, and goes on). A large store takes a while once for an index
    (about 20 s per 10 million rows)."""
    try:
        with engine.begin() as conn:
            for statement in step.statements:
                conn.execute(text(statement))
            conn.execute(update(store_meta).where(store_meta.c.key == "store_version").values(value=str(step.version)))
    except SQLAlchemyError as exc:
        if (_version(engine, label) or 0) < step.version:
            failed = f"could not upgrade the history store to version {step.version}"
            raise InfrastructureError(f"{failed}: {driver_message(exc)}") from None  # no SQL: the driver's words
