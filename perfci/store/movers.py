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
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select

from perfci.metrics.registry import BANDWIDTH_PCT_PEAK, FLOPS_PCT_PEAK, metric_direction
from perfci.model import Direction
from perfci.store.history import HistoryStore
from perfci.store.tables import measurements, runs
from perfci.store.trend import Shift, Trend

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
    latest: dict[str, dict[str, str]] = {}  # runner -> case -> run id of its latest point
    for t in items:
        if t.points:
            latest.setdefault(t.runner, {})[t.case_id] = t.points[-1].run_id
    out: dict[tuple[str, str], tuple[float, str]] = {}
    with store.engine.connect() as conn:
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
