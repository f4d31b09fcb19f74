"""Decide, per case, whether the candidate regressed against the baseline.

Rule (unpaired rounds, e.g. two separate runs): the unit of replication is the round (worker process).
Let r = ratio of geometric means of per-round median latencies (candidate / baseline), with a one-sided
99% Welch-t bound on the log scale.
- regression: lower bound > 1 and r >= 1 + threshold
- improvement: upper bound < 1 and r <= 1 / (1 + threshold)
- inconclusive: r is beyond the threshold but the bound does not confirm it (too noisy to tell)
- unchanged: otherwise
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perfci.metrics import round_medians
from perfci.model import CaseResult, CaseStatus, Comparison, MetricComparison, RunResult, Verdict
from perfci.stats.ratio import unpaired_log_ratio

LATENCY = "latency.median"


@dataclass(frozen=True)
class DecisionSettings:
    threshold: float = 0.05
    confidence: float = 0.99


def _value(case: CaseResult) -> float | None:
    m = case.metric(LATENCY)
    return m.value if m else None


def compare_case(base: CaseResult, cand: CaseResult, settings: DecisionSettings) -> MetricComparison:
    if cand.status is CaseStatus.ERROR:
        message = cand.errors[0].message if cand.errors else "error"
        return MetricComparison(cand.id, LATENCY, Verdict.ERROR, "s", _value(base), None, note=message)
    if base.status is CaseStatus.ERROR or not base.rounds:
        return MetricComparison(cand.id, LATENCY, Verdict.NEW, "s", None, _value(cand), note="baseline has no data")
    est = unpaired_log_ratio(round_medians(base.rounds), round_medians(cand.rounds), settings.confidence)
    up = 1.0 + settings.threshold
    if math.isnan(est.lower_bound):
        verdict = Verdict.INCONCLUSIVE
    elif est.lower_bound > 1.0 and est.ratio >= up:
        verdict = Verdict.REGRESSION
    elif est.upper_bound < 1.0 and est.ratio <= 1.0 / up:
        verdict = Verdict.IMPROVEMENT
    elif est.ratio >= up or est.ratio <= 1.0 / up:
        verdict = Verdict.INCONCLUSIVE
    else:
        verdict = Verdict.UNCHANGED
    return MetricComparison(
        case_id=cand.id,
        metric=LATENCY,
        verdict=verdict,
        unit="s",
        baseline=_value(base),
        candidate=_value(cand),
        ratio=est.ratio,
        ratio_low=est.low,
        ratio_high=est.high,
        threshold=settings.threshold,
    )


def compare_runs(
    baseline: RunResult, candidate: RunResult, settings: DecisionSettings, labels: tuple[str, str] = ("", "")
) -> Comparison:
    rows: list[MetricComparison] = []
    base_ids = {c.id for c in baseline.cases}
    for cand in candidate.cases:
        base = baseline.case(cand.id)
        if base is None:
            rows.append(MetricComparison(cand.id, LATENCY, Verdict.NEW, "s", None, _value(cand)))
        else:
            rows.append(compare_case(base, cand, settings))
    for base in baseline.cases:
        if base.id not in {c.id for c in candidate.cases} and base.id in base_ids:
            rows.append(MetricComparison(base.id, LATENCY, Verdict.MISSING, "s", _value(base), None))
    return Comparison(labels[0] or baseline.run_id, labels[1] or candidate.run_id, tuple(rows))
