"""The estimate of log(candidate / baseline) against a rolling baseline: the latest N runs of a history. Pure.

Each stored run contributes one value, its mean log per-round value x_i (or the log of its stored value when its
round statistics are missing). Their scatter holds everything that moves a run: the rounds' noise and each run's
own job shift, so the baseline's standard error is simply sd(x) / sqrt(N). The candidate is one job: its rounds'
Welch term plus one job term (`job_noise`, the sd of a run's shift, learned from the same history):

    log ratio = mean(y) - mean(x),   se^2 = var(x) / N + var(y) / n + job_noise^2

(a stored single baseline pays the job term twice, once per side; N runs average theirs away). Degrees of freedom
are Welch-Satterthwaite's for the sampled part, the job term taken as known, as in logratio.unpaired_log_ratio.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from perfci.stats.logratio import LogRatio


def _mean_var(v: Sequence[float]) -> tuple[float, float]:
    m = math.fsum(v) / len(v)
    return m, (math.fsum((x - m) ** 2 for x in v) / (len(v) - 1) if len(v) > 1 else math.nan)


def rolling_log_ratio(history_logs: Sequence[float], candidate: Sequence[float], job_noise: float) -> LogRatio:
    """`history_logs`: one log value per stored run; `candidate`: the candidate's per-round values (not logs)."""
    if job_noise < 0:
        raise ValueError("job_noise must be >= 0")
    if not history_logs or not candidate:
        raise ValueError("rolling_log_ratio needs values on both sides")
    if min(candidate) <= 0 or not all(math.isfinite(v) for v in (*candidate, *history_logs)):
        raise ValueError("values must be finite (and the candidate's positive)")
    ys = [math.log(v) for v in candidate]
    (ma, va), (mb, vb) = _mean_var(history_logs), _mean_var(ys)
    na, nb = len(history_logs), len(ys)
    if na < 2 or nb < 2:
        return LogRatio(mb - ma, math.nan, math.nan, na, nb)
    sampled = va / na + vb / nb
    welch = (va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1)
    dof = sampled**2 / welch if welch > 0 else math.inf
    return LogRatio(mb - ma, math.sqrt(sampled + job_noise**2), dof, na, nb)
