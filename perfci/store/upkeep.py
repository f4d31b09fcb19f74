"""Keeping the history store in shape: pruning old runs, and the cache of each series' change points."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from perfci.store.retries import writing
from perfci.store.tables import change_points, measurements, runs

# how long a trend waits for another writer's lock to cache the change points it computed: the cache is only a
# saving, so a store another process is writing to answers after this wait, without caching (docs/history.md)
CACHE_LOCK_WAIT_S = 2.0


@dataclass(frozen=True)
class Pruned:
    """One runner class's runs after `prune`: how many were deleted (with a dry run: would be) and kept."""

    runner: str
    deleted: int
    kept: int


def prune(engine: Engine, keep: int, names: list[str], dry_run: bool = False) -> list[Pruned]:
    """Delete all but the latest `keep` runs of each runner of `names` that has runs, with their measurements, in
    one transaction (holding the write lock from its start; a dry run only reads). What was deleted (would be,
    with `dry_run`) and kept, per runner with runs, in the order of `names`."""
    if keep < 1:
        raise ValueError("keep must be at least 1")
    out: list[Pruned] = []
    with engine.connect() if dry_run else writing(engine) as conn:
        for name in names:
            latest_first = select(runs.c.id).where(runs.c.runner == name)
            ids = list(conn.scalars(latest_first.order_by(runs.c.started_at.desc(), runs.c.id.desc())))
            if not ids:
                continue
            old = ids[keep:]
            out.append(Pruned(name, len(old), len(ids) - len(old)))
            if old and not dry_run:
                # measurements first: SQLite does not enforce ON DELETE CASCADE unless asked to
                conn.execute(delete(measurements).where(measurements.c.run.in_(old)))
                conn.execute(delete(runs).where(runs.c.id.in_(old)))
                # its cached change points: they would never match again (their series changed)
                conn.execute(delete(change_points).where(change_points.c.runner == name))
    return out


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
    transaction. False where the store cannot be written (a read-only user or file, another writer's lock held
    past CACHE_LOCK_WAIT_S): the cache is only a saving, and the trend goes on without it."""
    if not entries:
        return True
    c = change_points.c
    key = (c.runner == runner) & (c.metric == metric) & (c.method == method)
    rows = [
        {"runner": runner, "metric": metric, "case_id": case, "method": method, "series": d, "result": r}
        for case, (d, r) in entries.items()
    ]
    try:
        with writing(engine, CACHE_LOCK_WAIT_S) as conn:
            cases = list(entries)
            for start in range(0, len(cases), 500):  # bounded IN lists
                conn.execute(delete(change_points).where(key, c.case_id.in_(cases[start : start + 500])))
            conn.execute(insert(change_points), rows)
    except SQLAlchemyError:
        return False
    return True
