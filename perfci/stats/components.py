"""Variance components of repeated jobs: how much of the spread between jobs the rounds inside them explain.

A job (one `perfci run` invocation, one CI job) measures a case in n rounds. If rounds were the only source of
noise, the mean of a job's n log round values would scatter with variance s_w^2 / n across jobs (s_w^2: the
pooled variance of rounds within a job). Whatever the job means scatter beyond that is a job-level term (the
machine's state over minutes, the process layout of the job): more rounds do not shrink it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist, fmean


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
    grand = fmean(means)
    between_var = sum((m - grand) ** 2 for m in means) / (len(means) - 1)
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
