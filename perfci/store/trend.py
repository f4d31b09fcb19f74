"""Trend analysis over the history store: per runner, case and metric, the series and its change points."""

from __future__ import annotations

import hashlib
import itertools
import json
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from statistics import geometric_mean
from typing import TYPE_CHECKING, Any

from perfci.format.model import Direction
from perfci.metrics.registry import LATENCY, metric_direction
from perfci.patterns import CasePattern, matches_any
from perfci.profilers.fingerprint_changes import change_text, fingerprint_changes
from perfci.stats import changepoint
from perfci.stats.changepoint import DEFAULT_ALPHA, DEFAULT_MIN_SIZE, ChangePoint, detect_change_points

if TYPE_CHECKING:  # the store imports SQLAlchemy: not at the start of every command (docs/scale.md)
    from perfci.store.history import HistoryStore, Point

TOO_FEW_RUNS = "too few runs"  # a series too short to show a change point, whatever it holds
# the order rows are listed in: worse first, then better, steady, and series too short to call
STATUS_RANK = {"worse": 0, "better": 1, "steady": 2, TOO_FEW_RUNS: 3}


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
        """'worse' / 'better': the last change point made the metric worse / better (for its direction; a trend's
        status is not a comparison's `slower`, which means a change below the threshold);
        'steady': no change point; TOO_FEW_RUNS: none, in fewer runs than one needs on both sides."""
        if not self.shifts:
            return "steady" if len(self.points) >= 2 * DEFAULT_MIN_SIZE else TOO_FEW_RUNS
        ratio = self.shifts[-1].ratio
        worse = ratio > 1.0 if metric_direction(self.metric) is Direction.LOWER else ratio < 1.0
        return "worse" if worse else "better"

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
        if self.status() != "worse":
            return None
        last = self.shifts[-1]
        return last if last.index >= len(self.points) - runs else None


@dataclass(frozen=True)
class Drift:
    """Slowdowns below the threshold since a case's last change point that add up past it: each step
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


Detector = Callable[..., list[ChangePoint]]  # detect_change_points' signature: (values, alpha=, min_effect=)


@cache
def _source_digest() -> bytes | None:
    """The change-point module's code, hashed: a cached result is used only by the code that made it. None where
    the source cannot be read (no caching then)."""
    try:
        return hashlib.blake2b(Path(changepoint.__file__).read_bytes(), digest_size=8).digest()
    except (OSError, TypeError):
        return None


def cache_method(detect: Detector, alpha: float, min_effect: float) -> str | None:
    """The key of a detector's cached results: its code (the change-point module's, and which function) and its
    settings; None where its code cannot be identified."""
    source = _source_digest()  # read once, on first use (not at import)
    if source is None:
        return None
    who = f"{detect.__module__}.{detect.__qualname__}".encode()
    return f"{hashlib.blake2b(source + who, digest_size=8).hexdigest()};alpha={alpha!r};min_effect={min_effect!r}"


def series_digest(values: Sequence[float]) -> str:
    """A digest of a series' values (their exact bits, in order): the key of its cached change points."""
    return hashlib.blake2b(array("d", values).tobytes(), digest_size=16).hexdigest()


def _encode(cps: list[ChangePoint]) -> str:
    return json.dumps([[c.index, c.before, c.after, c.ratio, c.p_value] for c in cps])


def _decode(text: str, length: int) -> list[ChangePoint] | None:
    """Cached change points, or None where the entry is not what `_encode` writes for a series of `length`."""
    try:
        cps = [ChangePoint(int(i), float(b), float(a), float(r), float(p)) for i, b, a, r, p in json.loads(text)]
    except (ValueError, TypeError):
        return None
    return cps if all(0 < c.index < length for c in cps) else None


def trends(
    store: HistoryStore,
    metric: str = LATENCY,
    runner: str | None = None,
    patterns: tuple[CasePattern, ...] = (),
    min_effect: float = 0.03,
    alpha: float = DEFAULT_ALPHA,
    detect: Detector = detect_change_points,
    cache: bool = True,
) -> list[Trend]:
    """Each selected series with its change points. With `cache`, the change points of a series whose values
    are those of the last computation (same detector code and settings) are read from the store, and the series
    computed now are saved there: a daily trend recomputes only the series with new runs (docs/history.md)."""
    method = cache_method(detect, alpha, min_effect) if cache else None
    out: list[Trend] = []
    for r in [runner] if runner else store.runners():
        cached = store.cached_change_points(r, metric, method) if method else {}
        fresh: dict[str, tuple[str, str]] = {}
        for case_id, points in store.all_series(r, metric).items():  # one query per runner, cases in name order
            if patterns and not matches_any(patterns, case_id):
                continue
            values = [p.value for p in points]
            cps: list[ChangePoint] | None = None
            if method:
                digest = series_digest(values)
                hit = cached.get(case_id)
                cps = _decode(hit[1], len(values)) if hit is not None and hit[0] == digest else None
            if cps is None:
                cps = detect(values, alpha=alpha, min_effect=min_effect) if min(values, default=0) > 0 else []
                if method:
                    fresh[case_id] = (digest, _encode(cps))
            out.append(Trend(r, case_id, metric, tuple(points), tuple(_shift(points, cp) for cp in cps)))
        if method and fresh:
            store.save_change_points(r, metric, method, fresh)
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
