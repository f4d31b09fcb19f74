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
from statistics import fmean


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
