"""Trend analysis over the history store: per runner, case and metric, the series and its change points."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from statistics import geometric_mean
from typing import Any

from perfci.metrics.registry import LATENCY, metric_direction
from perfci.model import Direction
from perfci.patterns import CasePattern, matches_any
from perfci.profilers.fingerprint_changes import change_text, fingerprint_changes
from perfci.stats.changepoint import ChangePoint, detect_change_points
from perfci.store.history import HistoryStore, Point


@dataclass(frozen=True)
class Shift:
    """A change point, named by the run and commit that started the new regime."""

    run_id: str
    commit: str | None
    started_at: str
    before: float
    after: float
    ratio: float
    p_value: float
    index: int = 0  # position of the run in the series


@dataclass(frozen=True)
class Trend:
    runner: str
    case_id: str
    metric: str
    points: tuple[Point, ...]
    shifts: tuple[Shift, ...]

    @property
    def latest(self) -> float | None:
        return self.points[-1].value if self.points else None

    def status(self) -> str:
        """'slower' / 'faster': the last change point made the metric worse / better (for its direction);
        'steady': no change point."""
        if not self.shifts:
            return "steady"
        ratio = self.shifts[-1].ratio
        worse = ratio > 1.0 if metric_direction(self.metric) is Direction.LOWER else ratio < 1.0
        return "slower" if worse else "faster"

    def regimes(self) -> list[tuple[int, int, float]]:
        """(first index, last index, geometric mean) of each stretch between change points."""
        bounds = [0, *(s.index for s in self.shifts), len(self.points)]
        out = []
        for a, b in itertools.pairwise(bounds):
            values = [p.value for p in self.points[a:b] if p.value > 0]
            if values:
                out.append((a, b - 1, geometric_mean(values)))
        return out

    def worse_within(self, runs: int) -> Shift | None:
        """The last change point when it made the metric worse and started within the latest `runs` runs."""
        if self.status() != "slower":
            return None
        last = self.shifts[-1]
        return last if last.index >= len(self.points) - runs else None


@dataclass(frozen=True)
class Drift:
    """Slowdowns below the threshold since a case's last change point that add up past it (issue #20): each step
    alone is smaller than the threshold, so no change point is drawn, but together they are a regression."""

    total: float  # the level now over the level at the last change point (ratio; > 1 is worse for lower-is-better)
    steps: tuple[Shift, ...]  # the slowdown steps, each named by the run that started it, oldest first


DRIFT_MIN_STEP = 1.0 / 3.0  # a step counts when at least this share of the threshold (as slower, stats/decision.py)


def drift(trend: Trend, threshold: float, alpha: float = 0.01, min_step: float = DRIFT_MIN_STEP) -> Drift | None:
    """The below-threshold drift of `trend` since its last change point, when its slowdowns add up to at least
    `threshold` (net of speed-ups in between); else None.

    The stretch since the last change point is searched again for change points (the same method) of at least
    `min_step * threshold`; the level of each sub-stretch is its geometric mean, and the net change is the last
    level over the first."""
    start = trend.shifts[-1].index if trend.shifts else 0
    points = list(trend.points[start:])
    values = [p.value for p in points]
    if len(values) < 6 or min(values) <= 0:
        return None
    cps = detect_change_points(values, alpha=alpha, min_effect=min_step * threshold)
    if not cps:
        return None
    bounds = [0, *(cp.index for cp in cps), len(values)]
    levels = [geometric_mean(values[a:b]) for a, b in itertools.pairwise(bounds)]
    lower = metric_direction(trend.metric) is Direction.LOWER
    oriented = [(after / before if lower else before / after) for before, after in itertools.pairwise(levels)]
    total = levels[-1] / levels[0] if lower else levels[0] / levels[-1]
    if total - 1.0 < threshold:
        return None
    steps = tuple(
        _shift(points, replace(cp, before=before, after=after, ratio=after / before))
        for cp, before, after, worse in zip(cps, levels[:-1], levels[1:], oriented, strict=True)
        if worse > 1.0
    )
    steps = tuple(replace(s, index=s.index + start) for s in steps)
    return Drift(total if lower else 1.0 / total, steps) if steps else None


def _shift(points: list[Point], cp: ChangePoint) -> Shift:
    first = points[cp.index]
    return Shift(first.run_id, first.commit, first.started_at, cp.before, cp.after, cp.ratio, cp.p_value, cp.index)


def trends(
    store: HistoryStore,
    metric: str = LATENCY,
    runner: str | None = None,
    patterns: tuple[CasePattern, ...] = (),
    min_effect: float = 0.03,
    alpha: float = 0.01,
) -> list[Trend]:
    out: list[Trend] = []
    for r in [runner] if runner else store.runners():
        for case_id, points in store.all_series(r, metric).items():  # one query per runner, cases in name order
            if patterns and not matches_any(patterns, case_id):
                continue
            values = [p.value for p in points]
            cps = detect_change_points(values, alpha=alpha, min_effect=min_effect) if min(values, default=0) > 0 else []
            out.append(Trend(r, case_id, metric, tuple(points), tuple(_shift(points, cp) for cp in cps)))
    return out


# per runner: (run id, start time, fingerprint) of its runs in time order (HistoryStore.run_fingerprints)
Fingerprints = Mapping[str, list[tuple[str, str, dict[str, Any]]]]


def environment_changes(fingerprints: Fingerprints) -> dict[tuple[str, str], str]:
    """(runner, run id) -> what changed in the runner's environment since its previous run (hardware, drivers,
    Python, libraries), for the runs where something did: a change point there may be the upgrade's, not the
    commit's."""
    out: dict[tuple[str, str], str] = {}
    for runner, runs in fingerprints.items():
        for (_, _, before), (run_id, _, after) in itertools.pairwise(runs):
            hardware, software = fingerprint_changes(before, after)
            if hardware or software:
                out[(runner, run_id)] = change_text(hardware + software)
    return out
