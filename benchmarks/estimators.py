"""Estimators the maintained benchmarks use and the product does not: the variance components of repeated
jobs (aa_stability.py, quality/stored.py), the paired log-ratio of whole rounds (quality/simulate_rule.py) and
the previous change-point method (changepoints.py), kept to compare the product's rules against."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist, fmean, variance

from perfci.stats.changepoint import _mean_split, _t_sf2
from perfci.stats.logratio import LogRatio, paired_differences


@dataclass(frozen=True)
class JobComponents:
    jobs: int
    rounds: float  # rounds per job (harmonic mean: what the job means' variance depends on)
    within_sd: float  # pooled sd of rounds inside a job
    between_sd: float  # sd of the job means, as observed
    job_sd: float  # the job-level term: sqrt(max(0, between^2 - within^2 / rounds))


def job_components(groups: Sequence[Sequence[float]]) -> JobComponents:
    """Variance components of per-job groups of values (use logs of per-round values). Needs >= 2 jobs with >= 2
    values each."""
    used = [list(g) for g in groups if len(g) >= 2]
    if len(used) < 2:
        raise ValueError("need at least 2 jobs with at least 2 rounds each")
    means = [fmean(g) for g in used]
    dof = sum(len(g) - 1 for g in used)
    within_var = sum((x - m) ** 2 for g, m in zip(used, means, strict=True) for x in g) / dof
    rounds = 1.0 / fmean(1.0 / len(g) for g in used)
    between_var = variance(means)
    job_var = max(0.0, between_var - within_var / rounds)
    return JobComponents(len(used), rounds, math.sqrt(within_var), math.sqrt(between_var), math.sqrt(job_var))


def expected_normal_range(k: int, steps: int = 4000) -> float:
    """Expected range (max - min) of k independent standard normal draws: the integral over x of
    1 - Phi(x)^k - (1 - Phi(x))^k (midpoint rule on [-8, 8]). k=2: 2/sqrt(pi) = 1.128; k=5: 2.326."""
    if k < 2:
        return 0.0
    nd = NormalDist()
    lo, hi = -8.0, 8.0
    h = (hi - lo) / steps
    total = 0.0
    for i in range(steps):
        p = nd.cdf(lo + (i + 0.5) * h)
        total += 1.0 - p**k - (1.0 - p) ** k
    return total * h


def rounds_for_spread(components: JobComponents, spread: float, jobs: int) -> float | None:
    """Rounds per job for which `jobs` jobs' means are expected to spread by at most `spread` (max/min - 1), or
    None when the job-level term alone already exceeds it."""
    budget = math.log1p(spread) / expected_normal_range(jobs)
    room = budget**2 - components.job_sd**2
    if room <= 0.0:
        return None
    return components.within_sd**2 / room


def paired_log_ratio(baseline: Sequence[float], candidate: Sequence[float], trim: float = 0.0) -> LogRatio:
    """Paired estimate from per-pair values (baseline[i] and candidate[i] measured as one pair).

    With `trim` > 0 the estimate is Yuen's trimmed mean of d (robust to the odd pair whose two rounds saw a
    different machine state, e.g. a busy neighbour on the other hyperthread during one of them).
    """
    if len(baseline) != len(candidate):
        raise ValueError("paired_log_ratio needs as many baseline as candidate values")
    return paired_differences(
        [b - a for a, b in zip([math.log(x) for x in baseline], [math.log(x) for x in candidate], strict=True)], trim
    )


def mean_shift_points(
    values: Sequence[float], min_size: int = 3, alpha: float = 0.01, min_effect: float = 0.03
) -> list[int]:
    """The previous method, kept for comparison: binary segmentation with a two-sample t on the log means,
    Bonferroni-corrected, every run treated as independent. Indexes of the change points."""
    logs = [math.log(v) for v in values]
    found: list[int] = []

    def search(lo: int, hi: int) -> None:
        segment = logs[lo:hi]
        split = _mean_split(segment, min_size)
        if split is None:
            return
        k, t = split
        p = min(1.0, _t_sf2(t, len(segment) - 2) * (len(segment) - 2 * min_size + 1))
        shift = sum(segment[k:]) / (len(segment) - k) - sum(segment[:k]) / k
        if p < alpha and abs(math.exp(shift) - 1.0) >= min_effect:
            found.append(lo + k)
            search(lo, lo + k)
            search(lo + k, hi)

    search(0, len(logs))
    return sorted(found)
