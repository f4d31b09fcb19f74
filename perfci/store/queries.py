"""Reading the history store: runners, cases, a metric's series, the runs of a listing, an export, a rolling window.

Rows are read by column name: a query's columns are labelled with the names of the fields they fill (Point,
RunInfo, EXPORT_COLUMNS), and `_fields` looks those names up once per result, not once per row (a trend reads a
million points: Row's attribute access would cost it seconds).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from operator import itemgetter
from typing import Any

from sqlalchemy import ColumnElement, CursorResult, Select, func, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from perfci.store.records import (
    ALL_RUNS,
    EXPORT_COLUMNS,
    POINT_FIELDS,
    RUN_INFO_FIELDS,
    Point,
    RunFilter,
    RunInfo,
    checked_point,
)
from perfci.store.tables import measurements, runs


def _column(name: str) -> ColumnElement[Any]:
    """The stored column of that name, labelled with it: the run's where `runs` has one, else the measurement's."""
    return (runs.c[name] if name in runs.c else measurements.c[name]).label(name)


_POINT_COLUMNS = tuple(_column(name) for name in POINT_FIELDS)


def _fields(result: CursorResult[Any], *names: str) -> Callable[[Any], Any]:
    """A getter of the named columns of `result`'s rows: a tuple of them in that order (one name: its value)."""
    keys = list(result.keys())
    return itemgetter(*(keys.index(name) for name in names))


def runners(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.scalars(select(runs.c.runner).distinct().order_by(runs.c.runner)))


def cases(engine: Engine, runner: str, metric: str) -> list[str]:
    q = (
        select(measurements.c.case_id)
        .join(runs, measurements.c.run == runs.c.id)
        .where(runs.c.runner == runner, measurements.c.metric == metric)
        .distinct()
        .order_by(measurements.c.case_id)
    )
    with engine.connect() as conn:
        return list(conn.scalars(q))


def all_series(engine: Engine, runner: str, metric: str, case_id: str | None = None) -> dict[str, list[Point]]:
    """Case id -> its points of `metric` on `runner` in time order, in one query (all cases, or one).

    The query walks the runner's runs in time order and looks each run's values of `metric` up through the
    (run, metric, case) index; the rows are grouped by case here, which costs less than a sort in SQL. Cases
    come out in name order."""
    q = (
        select(_column("case_id"), *_POINT_COLUMNS)
        .join(runs, measurements.c.run == runs.c.id)
        .where(runs.c.runner == runner, measurements.c.metric == metric)
        .order_by(runs.c.started_at, runs.c.id)
    )
    if case_id is not None:
        q = q.where(measurements.c.case_id == case_id)
    out: dict[str, list[Point]] = {}
    with engine.connect() as conn:
        result = conn.execute(q)
        case_of, point_of = _fields(result, "case_id"), _fields(result, *POINT_FIELDS)
        for row in result:
            case = case_of(row)
            points = out.get(case)
            if points is None:
                out[case] = points = []
            points.append(checked_point(case, metric, Point(*point_of(row))))
    return {case: out[case] for case in sorted(out)}


def list_runs(engine: Engine, where: RunFilter = ALL_RUNS, limit: int | None = None) -> list[RunInfo]:
    """Runs matching `where`, newest first (at most `limit`), each with its number of stored values."""
    counts = select(measurements.c.run, func.count().label("n")).group_by(measurements.c.run).subquery("counts")
    stored = func.coalesce(counts.c.n, 0).label("measurements")
    q = where.apply(
        select(*(_column(name) for name in RUN_INFO_FIELDS[:-1]), stored).outerjoin(counts, counts.c.run == runs.c.id)
    ).order_by(runs.c.started_at.desc(), runs.c.id.desc())
    if limit is not None:
        q = q.limit(limit)
    with engine.connect() as conn:
        return [RunInfo(**row._mapping) for row in conn.execute(q)]


def window(
    engine: Engine, runner: str, branch: str | None, n: int, metrics: Iterable[str]
) -> tuple[list[RunInfo], dict[tuple[str, str], list[Point]]]:
    """The latest `n` runs of `runner` (on `branch`, when given) in time order, and (case, metric) -> their
    points of each of `metrics` (a rolling baseline)."""
    latest = list(reversed(list_runs(engine, RunFilter(runner=runner, branch=branch), limit=n)))
    if not latest:
        return [], {}
    ids = select(runs.c.id).where(runs.c.runner == runner, runs.c.run_id.in_([r.run_id for r in latest]))
    q = (
        select(_column("case_id"), _column("metric"), *_POINT_COLUMNS)
        .join(runs, measurements.c.run == runs.c.id)
        .where(measurements.c.run.in_(ids), measurements.c.metric.in_(list(metrics)))
        .order_by(measurements.c.case_id, measurements.c.metric, runs.c.started_at, runs.c.id)
    )
    out: dict[tuple[str, str], list[Point]] = {}
    with engine.connect() as conn:
        result = conn.execute(q)
        key_of, point_of = _fields(result, "case_id", "metric"), _fields(result, *POINT_FIELDS)
        for row in result:
            case_id, metric = key = key_of(row)
            out.setdefault(key, []).append(checked_point(case_id, metric, Point(*point_of(row))))
    return latest, out


def run_fingerprints(engine: Engine, runner: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(run id, start time, fingerprint) of every run of `runner`, in time order."""
    q = select(runs.c.run_id, runs.c.started_at, runs.c.fingerprint).where(runs.c.runner == runner)
    with engine.connect() as conn:
        rows = conn.execute(q.order_by(runs.c.started_at, runs.c.id)).all()
    out = []
    for row in rows:
        try:
            fp = json.loads(row.fingerprint)
        except ValueError:
            fp = {}
        out.append((row.run_id, row.started_at, fp if isinstance(fp, dict) else {}))
    return out


def export_query(where: RunFilter = ALL_RUNS) -> Select[Any]:
    """The measurements of the runs matching `where`, one row per run, case and metric (EXPORT_COLUMNS), in
    runner, time and case order."""
    q = select(*(_column(name) for name in EXPORT_COLUMNS)).join(runs, measurements.c.run == runs.c.id)
    return where.apply(q).order_by(
        runs.c.runner, runs.c.started_at, runs.c.id, measurements.c.case_id, measurements.c.metric
    )


def measurements_frame(engine: Engine, where: RunFilter = ALL_RUNS) -> Any:
    """The store's measurements as a pandas DataFrame (EXPORT_COLUMNS; `started_at` as UTC timestamps)."""
    import pandas as pd  # lazily: importing pandas costs every command half a second

    with engine.connect() as conn:
        try:
            frame = pd.read_sql(export_query(where), conn)
        except pd.errors.DatabaseError as exc:  # pandas' wrapping puts the statement into its message
            if isinstance(exc.__cause__, SQLAlchemyError):
                raise exc.__cause__ from None
            raise
    frame["started_at"] = pd.to_datetime(frame["started_at"], utc=True, format="ISO8601")
    return frame
