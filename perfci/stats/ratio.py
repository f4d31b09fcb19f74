"""Ratio of a candidate to a baseline, estimated on the log scale from per-round values."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats as sps


@dataclass(frozen=True)
class RatioEstimate:
    """Candidate / baseline ratio with a two-sided interval and a one-sided lower bound at the given confidence."""

    ratio: float
    low: float
    high: float
    lower_bound: float  # one-sided bound on the side of "candidate larger"
    upper_bound: float  # one-sided bound on the side of "candidate smaller"
    n_baseline: int
    n_candidate: int


def _mean_var(logs: Sequence[float]) -> tuple[float, float]:
    n = len(logs)
    mean = sum(logs) / n
    var = sum((v - mean) ** 2 for v in logs) / (n - 1) if n > 1 else math.nan
    return mean, var


def unpaired_log_ratio(
    baseline: Sequence[float], candidate: Sequence[float], confidence: float = 0.99
) -> RatioEstimate:
    """Welch's t on log(per-round values): ratio of geometric means with intervals.

    The round (one worker process) is the unit of replication, so pass per-round medians, not raw samples.
    Needs at least two values per side; otherwise the bounds are nan (the caller must say "inconclusive").
    """
    if not baseline or not candidate or min(baseline) <= 0 or min(candidate) <= 0:
        raise ValueError("unpaired_log_ratio needs positive values on both sides")
    la = [math.log(x) for x in baseline]
    lb = [math.log(x) for x in candidate]
    ma, va = _mean_var(la)
    mb, vb = _mean_var(lb)
    d = mb - ma
    na, nb = len(la), len(lb)
    if na < 2 or nb < 2:
        nan = math.nan
        return RatioEstimate(math.exp(d), nan, nan, nan, nan, na, nb)
    se2 = va / na + vb / nb
    if se2 <= 0:
        r = math.exp(d)
        return RatioEstimate(r, r, r, r, r, na, nb)
    dof = se2**2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    se = math.sqrt(se2)
    t_two = float(sps.t.ppf(0.5 + confidence / 2.0, dof))
    t_one = float(sps.t.ppf(confidence, dof))
    return RatioEstimate(
        ratio=math.exp(d),
        low=math.exp(d - t_two * se),
        high=math.exp(d + t_two * se),
        lower_bound=math.exp(d - t_one * se),
        upper_bound=math.exp(d + t_one * se),
        n_baseline=na,
        n_candidate=nb,
    )
