"""Rolling baselines: compare a run with the latest N runs of a branch in the history store
(`perfci compare CANDIDATE --baseline store:main[:N]`).

A stored baseline file is one job, so every unpaired comparison pays its job shift as well as the candidate's.
The latest N runs of `main` on the same runner class average their job shifts away and show, in their own scatter,
how much a run moves: the timed rule is stats/rolling.py's estimate, with the candidate's job term learned from
the same history (compare/history_noise.py; the default of policy.py where the history is too short). Metrics
under the tolerance rule (memory) compare the candidate's rounds with the N runs' values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import geometric_mean

from perfci.compare.case_ids import moved_test_ids
from perfci.compare.coverage import recorded_scope, require_common, settle_missing
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
    implausible,
    launch_bound,
    metric_def,
    round_values,
    tolerance_of,
)
from perfci.stats.decision import decide, min_detectable, tolerance_interval, tolerance_verdict
from perfci.stats.rolling import rolling_log_ratio
from perfci.store.history import HistoryStore, Point, RunInfo

PREFIX = "store:"
DEFAULT_RUNS = 10


MAX_RUNS = 100_000  # `store:BRANCH:N`: far more runs than a rolling baseline uses


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
    runs, points = store.window(runner, spec.branch, spec.runs, metrics)
    if len(runs) < 2:
        raise UsageError(
            f"the history store {store.label} has {len(runs)} run(s) of runner class {runner!r} on branch "
            f"{spec.branch!r}; a rolling baseline needs at least 2.",
            hint="ingest main-branch runs with 'perfci history ingest', or pass --runner",
        )
    fps = {run_id: fp for run_id, _, fp in store.run_fingerprints(runner)}
    return RollingBaseline(spec, runner, runs, points, fps.get(runs[-1].run_id, {}))


def _logs(points: list[Point]) -> list[float]:
    """One log value per run: the mean log per-round value where every run has it, else the log of the value."""
    if all(p.log_mean is not None for p in points):
        return [p.log_mean for p in points if p.log_mean is not None]
    return [math.log(p.value) for p in points]


def nan_none(x: float) -> float | None:
    return None if math.isnan(x) else x


def _timed_row(
    case_id: str, mdef: MetricDef, pts: list[Point], cand: list[float], theta: float, alpha: float,
    settings: DecisionSettings,
) -> MetricComparison:  # fmt: skip
    logs = _logs(pts)
    est = rolling_log_ratio(logs, cand, job_noise(settings, case_id, mdef.name))
    higher = mdef.direction.value == "higher"
    d = decide(est, theta, alpha, higher, settings.noise_factor, settings.catch, settings.slower_min)
    low, high = est.interval(1.0 - 2.0 * alpha)
    return MetricComparison(
        case_id=case_id, metric=mdef.name, verdict=Verdict(d.verdict), unit=mdef.unit,
        baseline=math.exp(math.fsum(logs) / len(logs)), candidate=geometric_mean(cand), ratio=est.ratio,
        ratio_low=nan_none(low), ratio_high=nan_none(high), threshold=d.threshold,
        note=f"rolling baseline: {len(pts)} run(s)" if not math.isnan(est.se) else "too few runs or rounds",
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
            rows.append(_timed_row(cand.id, mdef, pts, cv, theta, alpha, settings))
        elif zero_ok:  # an absolute threshold: the slack, with no relative part
            rows.append(replace(_tolerance_row(cand.id, mdef, pts, cv, 0.0, theta), threshold=theta))
        else:
            slack = settings.memory_slack_bytes if mdef.unit == "B" else 0.0
            rows.append(_tolerance_row(cand.id, mdef, pts, cv, theta, slack))
    return rows


def compare_rolling(
    base: RollingBaseline, candidate: RunResult, settings: DecisionSettings, label: str, allow_mismatch: bool = False
) -> tuple[Comparison, RunResult]:
    """Each candidate case and metric against the window's runs; (comparison, the window as a run)."""
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
    return settle_missing(comparison, recorded_scope(candidate)), as_run
