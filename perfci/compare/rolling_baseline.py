"""Rolling baselines: compare a run with the latest N runs of a branch in the history store
(`perfci compare CANDIDATE --baseline store:main[:N]`).

A stored baseline file is one job, so every unpaired comparison pays its job shift as well as the candidate's.
The latest N runs of `main` on the same runner class average their job shifts away and show, in their own scatter,
how much a run moves: the timed rule is stats/rolling.py's estimate, with the candidate's job term learned from
the same history (compare/history_noise.py; the default of policy.py where the history is too short). Metrics
under the tolerance rule (memory) compare the candidate's rounds with the N runs' values.

The window never holds the candidate's own run: a candidate already in the store (a main-branch run ingested
before it is compared) is left out, and the window is the N runs before or beside it. A window is meant to be one
level, its runs differing by job shifts only: where a case's series has a change point (store/trend.py, as
`perfci trend` shows it) inside the window, a timed row compares with the runs since it, and its note says so;
with fewer than MIN_SINCE_CHANGE runs since it, the whole window is kept and the note says that it spans a change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from statistics import geometric_mean
from typing import TYPE_CHECKING

from perfci.compare.case_ids import moved_test_ids
from perfci.compare.coverage import recorded_scope, require_common, require_compared, settle_missing
from perfci.compare.decide import check_comparable, new_case_row
from perfci.compare.policy import DecisionSettings, job_noise, practical_threshold
from perfci.errors import UsageError
from perfci.format.comparison import run_side
from perfci.format.model import (
    CaseResult,
    CaseStatus,
    Comparison,
    GitInfo,
    Metric,
    MetricComparison,
    RunResult,
    Verdict,
)
from perfci.metrics.definition import GREW
from perfci.metrics.registry import (
    LATENCY,
    MetricDef,
    default_registry,
    implausible,
    launch_bound,
    metric_def,
    round_values,
    tolerance_of,
)
from perfci.stats.changepoint import DEFAULT_MIN_SIZE
from perfci.stats.decision import decide, min_detectable, tolerance_interval, tolerance_verdict
from perfci.stats.rolling import rolling_log_ratio
from perfci.store.trend import Shift, trends

if TYPE_CHECKING:  # the store imports SQLAlchemy: not at the start of every command (docs/scale.md)
    from perfci.store.history import HistoryStore, Point, RunInfo

PREFIX = "store:"
DEFAULT_RUNS = 10


MAX_RUNS = 100_000  # `store:BRANCH:N`: far more runs than a rolling baseline uses
# the fewest runs since a change point inside the window that a timed row compares with (as many as a change point
# needs on each side); with fewer, the row keeps the whole window
MIN_SINCE_CHANGE = DEFAULT_MIN_SIZE


@dataclass(frozen=True)
class StoreBaselineSpec:
    branch: str
    runs: int = DEFAULT_RUNS

    @property
    def label(self) -> str:
        return f"{PREFIX}{self.branch}:{self.runs}"


def parse_store_baseline(text: str) -> StoreBaselineSpec | None:
    """`store:BRANCH[:N]` (None for anything else, e.g. a file path)."""
    if not text.startswith(PREFIX):
        return None
    branch, _, count = text.removeprefix(PREFIX).partition(":")
    if not branch:
        raise UsageError(f"--baseline {text!r} names no branch.", hint="e.g. --baseline store:main or store:main:20")
    if count and (not count.isascii() or not count.isdigit() or not 2 <= int(count) <= MAX_RUNS):
        # past MAX_RUNS: 10^20 runs would raise an OverflowError in the database driver
        raise UsageError(
            f"--baseline {text!r}: the number of runs must be from 2 to {MAX_RUNS:,}.", hint="e.g. store:main:20"
        )
    return StoreBaselineSpec(branch, int(count) if count else DEFAULT_RUNS)


@dataclass(frozen=True)
class RollingBaseline:
    spec: StoreBaselineSpec
    runner: str
    runs: list[RunInfo]  # in time order
    points: dict[tuple[str, str], list[Point]]  # (case, metric) -> the runs' values
    fingerprint: dict[str, object]
    fingerprints: Mapping[str, dict[str, object]] = field(default_factory=dict)  # run id -> its fingerprint
    # (case, metric) -> the change points of its stored series at runs of the window (timed metrics), oldest first
    changes: Mapping[tuple[str, str], tuple[Shift, ...]] = field(default_factory=dict)
    store: str = "the history store"  # how messages name the store

    def without(self, run_id: str) -> RollingBaseline:
        """The window without the run `run_id` (the candidate's own, when the store holds it): the latest
        `spec.runs` of the others, with the fingerprint of the latest of them."""
        runs = [r for r in self.runs if r.run_id != run_id][-self.spec.runs :]
        if len(runs) < 2:
            raise UsageError(
                f"{self.store} has {len(runs)} run(s) of runner class {self.runner!r} on branch "
                f"{self.spec.branch!r} besides the candidate's own; a rolling baseline needs at least 2.",
                hint="ingest main-branch runs with 'perfci history ingest', or pass --runner",
            )
        kept = {r.run_id for r in runs}
        points = {key: [p for p in pts if p.run_id in kept] for key, pts in self.points.items()}
        fingerprint = self.fingerprints.get(runs[-1].run_id, self.fingerprint)
        return replace(self, runs=runs, points={k: v for k, v in points.items() if v}, fingerprint=fingerprint)

    @property
    def label(self) -> str:
        first, last = self.runs[0], self.runs[-1]
        commits = f"{(first.commit or '?')[:10]}..{(last.commit or '?')[:10]}"
        return f"{self.spec.branch}: last {len(self.runs)} run(s) of {self.runner} ({commits})"

    def as_run(self, candidate: RunResult) -> RunResult:
        """The window as a run for the reports: the latest run's identity, each candidate case's geometric means."""
        last = self.runs[-1]
        cases = []
        for c in candidate.cases:
            metrics = []
            for (case_id, name), pts in self.points.items():
                if case_id == c.id and all(p.value > 0 for p in pts):
                    direction = metric_def(name).direction
                    metrics.append(Metric(name, pts[-1].unit, direction, geometric_mean([p.value for p in pts])))
            if metrics:
                cases.append(CaseResult.of(c.spec, CaseStatus.OK, (), tuple(metrics)))
        return RunResult(
            run_id=self.spec.label, started_at=self.runs[0].started_at, finished_at=last.finished_at,
            fingerprint=dict(self.fingerprint), git=GitInfo(last.commit, self.spec.branch, False),
            settings={"rolling_baseline": {"runner": self.runner, "runs": [r.run_id for r in self.runs]}},
            cases=tuple(cases),
        )  # fmt: skip


def load_rolling(
    store: HistoryStore, spec: StoreBaselineSpec, runner: str, metrics: tuple[str, ...]
) -> RollingBaseline:
    """The latest `spec.runs` runs of the branch and one more, in case the candidate's own run is among them
    (compare_rolling leaves it out), with the change points of the timed metrics' series at those runs."""
    runs, points = store.window(runner, spec.branch, spec.runs + 1, metrics)
    if len(runs) < 2:
        raise UsageError(
            f"the history store {store.label} has {len(runs)} run(s) of runner class {runner!r} on branch "
            f"{spec.branch!r}; a rolling baseline needs at least 2.",
            hint="ingest main-branch runs with 'perfci history ingest', or pass --runner",
        )
    fps = {run_id: fp for run_id, _, fp in store.run_fingerprints(runner)}
    fingerprints = {r.run_id: fps.get(r.run_id, {}) for r in runs}
    label = f"the history store {store.label}"
    window = RollingBaseline(spec, runner, runs, points, fingerprints[runs[-1].run_id], fingerprints, store=label)
    return replace(window, changes=_changes(store, window, metrics))


def _changes(
    store: HistoryStore, window: RollingBaseline, metrics: tuple[str, ...]
) -> dict[tuple[str, str], tuple[Shift, ...]]:
    """(case, metric) -> the change points of the runner's stored series (all of its runs, as `perfci trend`
    finds them) that started at a run of the window, for the timed metrics."""
    inside = {r.run_id for r in window.runs}
    out: dict[tuple[str, str], tuple[Shift, ...]] = {}
    for name in metrics:
        known = default_registry().get(name)
        if known is None or not known.timed or not any(m == name for _, m in window.points):
            continue
        for t in trends(store, name, window.runner):
            found = tuple(s for s in t.shifts if s.run_id in inside)
            if found and (t.case_id, name) in window.points:
                out[(t.case_id, name)] = found
    return out


def _logs(points: list[Point]) -> list[float]:
    """One log value per run: the mean log per-round value where every run has it, else the log of the value."""
    if all(p.log_mean is not None for p in points):
        return [p.log_mean for p in points if p.log_mean is not None]
    return [math.log(p.value) for p in points]


def nan_none(x: float) -> float | None:
    return None if math.isnan(x) else x


def _since_change(pts: list[Point], shifts: tuple[Shift, ...]) -> tuple[list[Point], str | None]:
    """The window's points of a row since the last change point inside the window (at a run after its first),
    with words for the row's note; with fewer than MIN_SINCE_CHANGE runs since it, all the points, and words that
    say the window spans it. The points as they are, and None, without such a change point."""
    at = {p.run_id: i for i, p in enumerate(pts)}
    for s in reversed(shifts):
        i = at.get(s.run_id)
        if not i:  # not among the row's runs, or at the first of them (the whole window is after it)
            continue
        what = f"the change point at run {s.run_id} (commit {(s.commit or '?')[:10]}, {s.ratio - 1.0:+.1%})"
        if len(pts) - i >= MIN_SINCE_CHANGE:
            return pts[i:], f"since {what}; the {i} run(s) before it left out"
        return pts, f"across {what}: fewer than {MIN_SINCE_CHANGE} runs since it"
    return pts, None


def _timed_row(
    case_id: str, mdef: MetricDef, pts: list[Point], cand: list[float], theta: float, alpha: float,
    settings: DecisionSettings, change: str | None = None,
) -> MetricComparison:  # fmt: skip
    logs = _logs(pts)
    est = rolling_log_ratio(logs, cand, job_noise(settings, case_id, mdef.name))
    higher = mdef.direction.value == "higher"
    d = decide(est, theta, alpha, higher, settings.noise_factor, settings.catch, settings.slower_min)
    low, high = est.interval(1.0 - 2.0 * alpha)
    note = f"rolling baseline: {len(pts)} run(s)" if not math.isnan(est.se) else "too few runs or rounds"
    return MetricComparison(
        case_id=case_id, metric=mdef.name, verdict=Verdict(d.verdict), unit=mdef.unit,
        baseline=math.exp(math.fsum(logs) / len(logs)), candidate=geometric_mean(cand), ratio=est.ratio,
        ratio_low=nan_none(low), ratio_high=nan_none(high), threshold=d.threshold,
        note=f"{note} {change}" if change else note,
        direction=mdef.direction, method="unpaired", confidence=1.0 - alpha, bound=nan_none(d.bound),
        noise=nan_none(est.se), n_baseline=est.n_baseline, n_candidate=est.n_candidate,
        mdc=nan_none(min_detectable(est, alpha)),
    )  # fmt: skip


def _tolerance_row(
    case_id: str, mdef: MetricDef, pts: list[Point], cand: list[float], theta: float, slack: float
) -> MetricComparison:
    base = [p.value for p in pts]
    verdict = tolerance_verdict(base, cand, theta, slack, mdef.direction.value == "higher")
    mb, mc = sorted(base)[len(base) // 2], sorted(cand)[len(cand) // 2]
    low, high = tolerance_interval(base, cand, by_difference=mdef.moves == GREW)
    return MetricComparison(
        case_id=case_id, metric=mdef.name, verdict=Verdict(verdict), unit=mdef.unit, baseline=mb, candidate=mc,
        ratio=mc / mb if mb else None, ratio_low=low, ratio_high=high, threshold=theta,
        direction=mdef.direction, method="tolerance", n_baseline=len(base), n_candidate=len(cand),
    )  # fmt: skip


def _case_rows(base: RollingBaseline, cand: CaseResult, settings: DecisionSettings, n: int) -> list[MetricComparison]:
    if cand.status is not CaseStatus.OK:
        verdict = Verdict.ERROR if cand.status is CaseStatus.ERROR else Verdict.MISSING
        message = cand.errors[0].message if cand.errors else cand.status.value
        message = message if verdict is Verdict.ERROR else f"skipped: {message}"  # left out on purpose (coverage.py)
        return [MetricComparison(cand.id, LATENCY, verdict, "s", None, None, note=message)]
    rows: list[MetricComparison] = []
    alpha = settings.alpha(n)
    for name in settings.metrics:
        mdef = settings.registry.comparable(name)
        zero_ok = mdef.threshold.absolute  # an accuracy error of 0 is a value
        pts = [p for p in base.points.get((cand.id, name), []) if p.value > 0 or (zero_ok and p.value == 0)]
        cv = list(round_values(cand, mdef).values())
        if not pts or not cv or implausible(cand, name):
            continue
        tolerance = tolerance_of(cand, name) if zero_ok else None
        theta = practical_threshold(settings, cand.id, mdef, launch_bound(cand), tolerance)
        if mdef.timed:
            pts, change = _since_change(pts, base.changes.get((cand.id, name), ()))
            rows.append(_timed_row(cand.id, mdef, pts, cv, theta, alpha, settings, change))
        elif zero_ok:  # an absolute threshold: the slack, with no relative part
            rows.append(replace(_tolerance_row(cand.id, mdef, pts, cv, 0.0, theta), threshold=theta))
        else:
            slack = settings.memory_slack_bytes if mdef.unit == "B" else 0.0
            rows.append(_tolerance_row(cand.id, mdef, pts, cv, theta, slack))
    return rows


def compare_rolling(
    base: RollingBaseline, candidate: RunResult, settings: DecisionSettings, label: str, allow_mismatch: bool = False
) -> tuple[Comparison, RunResult]:
    """Each candidate case and metric against the window's runs, the candidate's own run left out; (comparison,
    the window as a run)."""
    base = base.without(candidate.run_id)
    moved = moved_test_ids(sorted({case_id for case_id, _ in base.points}), [c.id for c in candidate.cases])
    if moved:  # pytest ids stored before they were relative to the project root (case_ids.py)
        base = replace(base, points={(moved.get(c, c), m): p for (c, m), p in base.points.items()})
    as_run = base.as_run(candidate)
    check_comparable(as_run, candidate, allow_mismatch)
    stored = {case_id for case_id, _ in base.points}
    n = sum(1 for c in candidate.cases if c.id in stored)
    require_common(as_run, candidate, (base.label, label), n)
    rows: list[MetricComparison] = []
    for cand in candidate.cases:
        if cand.id not in stored:
            rows.append(new_case_row(cand))
        else:
            rows += _case_rows(base, cand, settings, n)
    cand_ids = {c.id for c in candidate.cases}
    rows += [MetricComparison(c, LATENCY, Verdict.MISSING, "s", None, None) for c in sorted(stored - cand_ids)]
    comparison = Comparison(
        base.label, label, tuple(rows), (), mode="unpaired", baseline_run=run_side(as_run),
        candidate_run=run_side(candidate), settings=settings.as_dict(),
    )  # fmt: skip
    return require_compared(settle_missing(comparison, recorded_scope(candidate)), settings.metrics), as_run
