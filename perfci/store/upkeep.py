"""Keeping the history store in shape: pruning old runs, and the cache of each series' change points."""

from __future__ import annotations

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from perfci.errors import InfrastructureError
from perfci.store.retries import lock_for_write
from perfci.store.tables import change_points, measurements, runs


def prune(engine: Engine, keep: int, names: list[str], dry_run: bool = False) -> dict[str, int]:
    """Delete all but the latest `keep` runs of each runner of `names`, with their measurements, in one
    transaction. Returns runner -> runs deleted (what would be deleted, with `dry_run`)."""
    if keep < 1:
        raise ValueError("keep must be at least 1")
    deleted: dict[str, int] = {}
    try:
        with engine.begin() as conn:
            for name in names:
                old = select(runs.c.id).where(runs.c.runner == name)
                ids = list(conn.scalars(old.order_by(runs.c.started_at.desc(), runs.c.id.desc()).offset(keep)))
                deleted[name] = len(ids)
                if ids and not dry_run:
                    # measurements first: SQLite does not enforce ON DELETE CASCADE unless asked to
                    conn.execute(delete(measurements).where(measurements.c.run.in_(ids)))
                    conn.execute(delete(runs).where(runs.c.id.in_(ids)))
                    # its cached change points: they would never match again (their series changed)
                    conn.execute(delete(change_points).where(change_points.c.runner == name))
    except SQLAlchemyError as exc:
        raise InfrastructureError(f"could not prune the history store: {exc}") from None
    return deleted


def cached_change_points(engine: Engine, runner: str, metric: str, method: str) -> dict[str, tuple[str, str]]:
    """Case id -> (series digest, result) of the change points cached for `runner`'s `metric` by `method`
    (tables.change_points); empty where the store has none or cannot be read for them."""
    c = change_points.c
    q = select(c.case_id, c.series, c.result).where(c.runner == runner, c.metric == metric, c.method == method)
    try:
        with engine.connect() as conn:
            return {row.case_id: (row.series, row.result) for row in conn.execute(q)}
    except SQLAlchemyError:  # a store whose cache table cannot be read: every series is computed
        return {}


def save_change_points(
    engine: Engine, runner: str, metric: str, method: str, entries: dict[str, tuple[str, str]]
) -> bool:
    """Cache change points: case id -> (series digest, result), replacing the entries of those cases, in one
    transaction. False where the store cannot be written (a read-only user or file, a lock held past the busy
    timeout): the cache is only a saving, and the trend goes on without it."""
    if not entries:
        return True
    c = change_points.c
    key = (c.runner == runner) & (c.metric == metric) & (c.method == method)
    rows = [
        {"runner": runner, "metric": metric, "case_id": case, "method": method, "series": d, "result": r}
        for case, (d, r) in entries.items()
    ]
    try:
        with engine.begin() as conn:
            lock_for_write(conn)
            cases = list(entries)
            for start in range(0, len(cases), 500):  # bounded IN lists
                conn.execute(delete(change_points).where(key, c.case_id.in_(cases[start : start + 500])))
            conn.execute(insert(change_points), rows)
    except SQLAlchemyError:
        return False
    return True
