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
    between_var = _variance(means)
    job_var = max(0.0, between_var - within_var / rounds)
    return JobComponents(len(used), rounds, math.sqrt(within_var), math.sqrt(between_var), math.sqrt(job_var))


def _variance(xs: Sequence[float]) -> float:
    m = fmean(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


@dataclass(frozen=True)
class JobTerm:
    """The job-level term estimated from per-job summaries (e.g. a history of runs)."""

    jobs: int
    between_sd: float  # sd of the job means
    sampling_sd: float  # what the rounds alone explain of it: sqrt(mean(round_sd_i^2 / rounds_i))
    job_sd: float  # point estimate: sqrt(max(0, between^2 - sampling^2))
    job_upper: float  # one-sided upper confidence bound of the job term (chi-square bound on the between variance)
    confidence: float


def job_term(
    means: Sequence[float], round_sds: Sequence[float], rounds: Sequence[int], confidence: float = 0.9
) -> JobTerm:
    """Job-level term from per-job summaries: each job's mean of log round values, the sd of its log round values
    and its number of rounds. The upper bound scales the between-job variance by (k-1) / chi2_{1-confidence, k-1}
    (exact for normal job means) before subtracting the sampling part; use it where underestimating the noise
    costs more than overestimating it (a gate's false alarms)."""
    k = len(means)
    if k < 3 or len(round_sds) != k or len(rounds) != k:
        raise ValueError("need at least 3 jobs, each with a mean, a round sd and a round count")
    if not 0.5 <= confidence < 1.0:
        raise ValueError("confidence must lie in [0.5, 1)")
    if any(n < 2 for n in rounds):
        raise ValueError("each job needs at least 2 rounds")
    from scipy import stats as sps  # lazily: importing scipy costs every CLI command about a second

    between_var = _variance(means)
    sampling_var = fmean(sd * sd / n for sd, n in zip(round_sds, rounds, strict=True))
    upper_var = between_var * (k - 1) / float(sps.chi2.ppf(1.0 - confidence, k - 1))
    return JobTerm(
        jobs=k,
        between_sd=math.sqrt(between_var),
        sampling_sd=math.sqrt(sampling_var),
        job_sd=math.sqrt(max(0.0, between_var - sampling_var)),
        job_upper=math.sqrt(max(0.0, upper_var - sampling_var)),
        confidence=confidence,
    )


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
