"""What a lead reads first in the trend report: the biggest movers over a window of recent runs, and one row per
case across runner classes (latest value, status, % of peak).

Movers are the change points (store/trend.py) that started within the latest `window` runs of their series, each
named by its commit range: the commit of the run before the change point (the last one of the old regime) to
the commit of the run that started the new one. % of peak comes from the metrics the engine derives from the
runner's measured peaks (metrics/derive.py): the latest stored value of `flops.pct_peak` and
`bandwidth.pct_peak` of each case, the larger of the two (the resource the case is bound by).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfci.format.model import Direction
from perfci.metrics.registry import BANDWIDTH_PCT_PEAK, FLOPS_PCT_PEAK, metric_direction
from perfci.store.trend import Shift, Trend

if TYPE_CHECKING:
    from perfci.store.history import HistoryStore

DEFAULT_WINDOW = 20  # runs: `perfci trend --window`


@dataclass(frozen=True)
class Mover:
    """A change point within the window: a regression (worse for the metric's direction) or an improvement."""

    runner: str
    case_id: str
    shift: Shift
    worse: bool
    from_commit: str | None  # the last run of the old regime
    to_commit: str | None  # the first run of the new one
    runs_ago: int  # how many runs before the latest one the new regime started (0: the latest run)

    @property
    def size(self) -> float:
        """|log ratio|: how big the move is, for ranking."""
        return abs(math.log(self.shift.ratio)) if self.shift.ratio > 0 else 0.0


def movers(items: Iterable[Trend], window: int) -> tuple[list[Mover], list[Mover]]:
    """(regressions, improvements) among the change points that started within the latest `window` runs of their
    series, each list biggest first."""
    worse: list[Mover] = []
    better: list[Mover] = []
    for t in items:
        n = len(t.points)
        lower = metric_direction(t.metric) is Direction.LOWER
        for s in t.shifts:
            if s.index < n - window or s.index < 1:
                continue
            bad = s.ratio > 1.0 if lower else s.ratio < 1.0
            m = Mover(t.runner, t.case_id, s, bad, t.points[s.index - 1].commit, s.commit, n - 1 - s.index)
            (worse if bad else better).append(m)
    worse.sort(key=lambda m: (-m.size, m.runner, m.case_id))
    better.sort(key=lambda m: (-m.size, m.runner, m.case_id))
    return worse, better


PEAK_METRICS = (FLOPS_PCT_PEAK, BANDWIDTH_PCT_PEAK)


def pct_of_peak(store: HistoryStore, items: Iterable[Trend]) -> dict[tuple[str, str], tuple[float, str]]:
    """(runner, case) -> (% of peak, the metric it is of) at the case's latest run, where the runner's peaks were
    known when it ran. One query per runner, over its latest runs only."""
    from sqlalchemy import select  # here: the rest of this module is pure, and read at every command's start

    from perfci.store.tables import measurements, runs

    latest: dict[str, dict[str, str]] = {}  # runner -> case -> run id of its latest point
    for t in items:
        if t.points:
            latest.setdefault(t.runner, {})[t.case_id] = t.points[-1].run_id
    out: dict[tuple[str, str], tuple[float, str]] = {}
    with store.errors(), store.engine.connect() as conn:
        for runner, by_case in latest.items():
            ids = sorted(set(by_case.values()))
            q = (
                select(runs.c.run_id, measurements.c.case_id, measurements.c.metric, measurements.c.value)
                .join(runs, measurements.c.run == runs.c.id)
                .where(runs.c.runner == runner, runs.c.run_id.in_(ids), measurements.c.metric.in_(PEAK_METRICS))
            )
            for run_id, case_id, metric, value in conn.execute(q):
                if by_case.get(case_id) != run_id or value is None:
                    continue
                best = out.get((runner, case_id))
                if best is None or value > best[0]:
                    out[(runner, case_id)] = (float(value), metric)
    return out


# The fewest runs a stretch of history may have on either side of a change point (detect_change_points'
# `min_size`; a unit test keeps the two equal): a move in the latest runs cannot be called before it has this many.
CALL_RUNS = 3


@dataclass(frozen=True)
class WindowMove:
    """A move seen in a time window (`perfci trend --since`): a change point that started there (`called`), or a
    step in the latest runs too recent for one, with the runs it still needs."""

    runner: str
    case_id: str
    metric: str
    ratio: float  # the level after the move over the level before it
    worse: bool
    run_id: str  # the first run at the new level
    commit: str | None
    started_at: str
    called: bool
    more_runs: int = 0  # not called: at least this many more runs at the new level before it can be
    runs_before: int = 0  # not called: runs at the old level (a change point needs CALL_RUNS on each side)


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _called(t: Trend, s: Shift, lower: bool) -> WindowMove:
    worse = s.ratio > 1.0 if lower else s.ratio < 1.0
    return WindowMove(t.runner, t.case_id, t.metric, s.ratio, worse, s.run_id, s.commit, s.started_at, True)


def _recent_step(t: Trend, cutoff: str, min_effect: float) -> WindowMove | None:
    """The step in the latest runs (fewer than CALL_RUNS, all in the window) whose every value differs from the
    level before them (the median of the runs since the last change point), on the same side, by at least
    `min_effect`; the earliest such start. None when none."""
    start = t.shifts[-1].index if t.shifts else 0
    tail = [p for p in t.points[start:] if p.value > 0]
    lower = metric_direction(t.metric) is Direction.LOWER
    found: WindowMove | None = None
    for k in range(1, min(CALL_RUNS, len(tail))):
        recent, before = tail[-k:], [p.value for p in tail[:-k]]
        if recent[0].started_at < cutoff:
            break
        level = statistics.median(before)  # robust: one slow run before the step does not make a step of its own
        changes = [p.value / level - 1.0 for p in recent]
        if not (all(c >= min_effect for c in changes) or all(c <= -min_effect for c in changes)):
            continue
        ratio = _geomean([p.value for p in recent]) / level
        first = recent[0]
        worse = ratio > 1.0 if lower else ratio < 1.0
        at = (first.run_id, first.commit, first.started_at)
        found = WindowMove(t.runner, t.case_id, t.metric, ratio, worse, *at, False, CALL_RUNS - k, len(before))
    return found


def window_moves(items: Iterable[Trend], cutoff: str, min_effect: float) -> tuple[list[WindowMove], int, int]:
    """What moved in the runs started at or after `cutoff` (UTC text, as stored): per case, the change points
    there, and a step too recent to call. Returns (moves, the worst first; cases with runs in the window and no
    move; cases without a run in the window)."""
    moves: list[WindowMove] = []
    steady = quiet = 0
    for t in items:
        if not t.points or t.points[-1].started_at < cutoff:
            quiet += 1
            continue
        lower = metric_direction(t.metric) is Direction.LOWER
        found = [_called(t, s, lower) for s in t.shifts if s.started_at >= cutoff]
        recent = _recent_step(t, cutoff, min_effect)
        found += [recent] if recent is not None else []
        moves += found
        steady += not found
    moves.sort(key=lambda m: (not m.worse, -abs(math.log(m.ratio)) if m.ratio > 0 else 0.0, m.runner, m.case_id))
    return moves, steady, quiet
