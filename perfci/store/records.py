"""What the history store's queries give back: stored points and runs, and the filter of a listing or export."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from perfci.errors import UsageError

if TYPE_CHECKING:  # SQLAlchemy is read when a query is built, not when these records are (every command's start)
    from sqlalchemy import Select


@dataclass(frozen=True)
class Point:
    """One stored value of a metric for a case, in time order. Each field is the stored column of the same name
    (runs: run_id, commit, started_at; measurements: the others), so POINT_FIELDS is a query's column list."""

    run_id: str
    commit: str | None
    started_at: str
    value: float
    low: float | None
    high: float | None
    unit: str = ""  # as stored with the measurement ("s", "B", "x ref", ...)
    rounds: int | None = None  # timed metrics (store version 2): rounds, and mean and sd of the log round values
    log_mean: float | None = None
    log_sd: float | None = None


POINT_FIELDS = tuple(f.name for f in fields(Point))
_NUMBER_FIELDS = ("value", "low", "high", "log_mean", "log_sd")  # Point's numeric fields (value: never None)


def checked_point(case_id: str, metric: str, point: Point) -> Point:
    """`point` with its numbers checked: SQLite keeps any value in any column, so a store edited by hand (or
    written by another tool) can hold text where a number belongs, which used to end `perfci trend` and
    `perfci history noise` in a traceback. UsageError naming the case, metric and run otherwise."""
    p = point
    v, lo, hi, n, lm, ls = p.value, p.low, p.high, p.rounds, p.log_mean, p.log_sd
    if (  # the usual row, at a glance (x - x is 0.0 for a finite float only), inline: a trend checks millions
        type(v) is float and v - v == 0.0
        and (lo is None or (type(lo) is float and lo - lo == 0.0))
        and (hi is None or (type(hi) is float and hi - hi == 0.0))
        and (n is None or type(n) is int)
        and (lm is None or (type(lm) is float and lm - lm == 0.0))
        and (ls is None or (type(ls) is float and ls - ls == 0.0))
    ):  # fmt: skip
        return p
    for name in _NUMBER_FIELDS:
        v = getattr(p, name)
        if (v is None and name != "value") or (type(v) in (int, float) and math.isfinite(v)):
            continue
        raise UsageError(
            f"the history store holds {v!r} as the {name} of {metric} for {case_id} in run {p.run_id!r}, "
            "which is not a finite number (the store was edited by hand or written by another tool).",
            hint="delete that run from the store, or point --db at another store",
        )
    if p.rounds is not None and type(p.rounds) is not int:
        raise UsageError(
            f"the history store holds {p.rounds!r} as the rounds of {metric} for {case_id} in run "
            f"{p.run_id!r}, which is not a count (the store was edited by hand or written by another tool).",
            hint="delete that run from the store, or point --db at another store",
        )
    return p


@dataclass(frozen=True)
class RunInfo:
    """One stored run (`perfci history list`). Each field but the last is the `runs` column of the same name."""

    run_id: str
    runner: str
    commit: str | None
    branch: str | None
    dirty: bool | None
    started_at: str
    finished_at: str
    measurements: int = 0  # stored values (case x metric)


RUN_INFO_FIELDS = tuple(f.name for f in fields(RunInfo))


@dataclass(frozen=True)
class RunFilter:
    """Which runs a listing or export covers: all of them, or those of a runner class, a branch, and a date range
    (`since` / `until`: ISO dates or times, compared with the run's start; `until` includes its whole day/time)."""

    runner: str | None = None
    branch: str | None = None
    since: str | None = None
    until: str | None = None

    def apply(self, q: Select[Any]) -> Select[Any]:
        from sqlalchemy import func

        from perfci.store.tables import runs

        if self.runner is not None:
            q = q.where(runs.c.runner == self.runner)
        if self.branch is not None:
            q = q.where(runs.c.branch == self.branch)
        if self.since:
            q = q.where(runs.c.started_at >= self.since)
        if self.until:
            q = q.where(func.substr(runs.c.started_at, 1, len(self.until)) <= self.until)
        return q


ALL_RUNS = RunFilter()  # every run: a listing's or an export's default

# the columns of an export (HistoryStore.measurements_frame): one row per run, case and metric
EXPORT_COLUMNS = (
    "runner", "run_id", "commit", "branch", "started_at", "case_id", "metric", "unit", "direction", "value", "low",
    "high", "rounds", "log_mean", "log_sd",
)  # fmt: skip
