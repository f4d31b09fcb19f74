"""Cross-job noise learned from the history store, per runner, case and metric.

Unpaired comparisons (a stored baseline against a fresh run) add a job term to the rounds' own spread
(stats/logratio.py): how much separate jobs on this kind of runner differ beyond their rounds. The defaults
(policy.py: 0.10 on CPU, 0.03 on GPU) are one figure for every runner and case; a runner's history knows better.
For each case: the stored runs since the series' last change point (store/trend.py), each with its rounds' mean
and sd of the log per-round values (store version 2), give the job term and a one-sided upper confidence bound
(stats/components.py `job_term`); the comparison uses the bound, so a short history errs towards "inconclusive"
rather than a false alarm. Cases with fewer than `min_runs` such runs keep the default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfci.metrics.registry import LATENCY
from perfci.patterns import CasePattern
from perfci.stats.components import JobTerm, job_term
from perfci.store.trend import Trend, trends

if TYPE_CHECKING:  # the store imports SQLAlchemy: not at the start of every command (docs/scale.md)
    from perfci.store.history import HistoryStore

MIN_RUNS = 10
CONFIDENCE = 0.9


@dataclass(frozen=True)
class NoiseEstimate:
    runner: str
    case_id: str
    metric: str
    runs: int  # runs stored for the case and metric
    used: int  # runs since the last change point that carry round statistics
    term: JobTerm | None  # None: fewer than min_runs usable runs
    since: str | None  # run id that started the segment (None: the whole series)

    @property
    def noise(self) -> float | None:
        """The job noise a comparison uses: the upper bound, or None to keep the default."""
        return self.term.job_upper if self.term is not None else None


def estimate_noise(
    store: HistoryStore,
    runner: str,
    metric: str = LATENCY,
    patterns: tuple[CasePattern, ...] = (),
    min_runs: int = MIN_RUNS,
    confidence: float = CONFIDENCE,
    items: list[Trend] | None = None,
    exclude_run: str | None = None,
) -> dict[str, NoiseEstimate]:
    """Per case of `runner` with `metric` in the store (`items`: trends already read, to reuse). `exclude_run`: the
    candidate's run where it is stored already (ingested before it is compared): a regression's own step would
    widen the noise it is judged by."""
    if min_runs < 3:
        raise ValueError("min_runs must be at least 3")
    out: dict[str, NoiseEstimate] = {}
    found = items if items is not None else trends(store, metric, runner, patterns)
    for t in found:
        if t.runner != runner or t.metric != metric:
            continue
        start = t.shifts[-1].index if t.shifts else 0
        segment = [
            p
            for p in t.points[start:]
            if p.run_id != exclude_run
            and p.rounds is not None
            and p.rounds >= 2
            and p.log_mean is not None
            and p.log_sd is not None
        ]
        term = None
        if len(segment) >= min_runs:
            term = job_term(
                [p.log_mean for p in segment if p.log_mean is not None],
                [p.log_sd for p in segment if p.log_sd is not None],
                [p.rounds for p in segment if p.rounds is not None],
                confidence,
            )
        since = t.shifts[-1].run_id if t.shifts else None
        out[t.case_id] = NoiseEstimate(runner, t.case_id, metric, len(t.points), len(segment), term, since)
    return out


class HistoryNoise:
    """`DecisionSettings.job_noise_lookup` backed by the history store: estimates per metric, read once."""

    def __init__(
        self, store: HistoryStore, runner: str, min_runs: int = MIN_RUNS, exclude_run: str | None = None
    ) -> None:
        self.store, self.runner, self.min_runs, self.exclude_run = store, runner, min_runs, exclude_run
        self.estimates: dict[str, dict[str, NoiseEstimate]] = {}
        self.asked: set[tuple[str, str]] = set()
        self.used: dict[tuple[str, str], float] = {}  # (case, metric) -> noise handed out

    def __call__(self, case_id: str, metric: str) -> float | None:
        self.asked.add((case_id, metric))
        if metric not in self.estimates:
            self.estimates[metric] = estimate_noise(
                self.store, self.runner, metric, min_runs=self.min_runs, exclude_run=self.exclude_run
            )
        found = self.estimates[metric].get(case_id)
        noise = found.noise if found is not None else None
        if noise is not None:
            self.used[(case_id, metric)] = noise
        return noise

    def summary(self) -> str | None:
        """One line for the comparison's notes: how many of the asked (case, metric) pairs got history noise."""
        if not self.asked:
            return None
        got = [pair for pair in sorted(self.asked) if pair in self.used]
        text = (
            f"cross-job noise from the history store (runner {self.runner}): {len(got)} of {len(self.asked)} "
            f"timed case/metric pair(s)"
        )
        if got:
            values = [self.used[p] for p in got]
            text += f", {min(values):.3f}-{max(values):.3f} (upper {CONFIDENCE:.0%} bound)"
        if len(got) < len(self.asked):
            text += f"; the rest have fewer than {self.min_runs} runs since their last change and keep the default"
        return text
