"""The decision rule: from an estimate of log(candidate / baseline) to a verdict. Pure functions.

Let b = log(candidate / baseline) oriented so that b > 0 is *worse* (a slowdown for a lower-is-better metric,
a loss for a higher-is-better one), se its standard error, alpha the one-sided error rate of this look.

- effective threshold: theta_eff = max(theta, exp(noise_factor * se) - 1). theta is the practical threshold (the
  smallest change anyone cares about); the noise term keeps the bar above what an A/A comparison with the same
  data would show (noise_factor = 3: an A/A estimate passes it with probability ~P(t > 3)).
- regression:   the one-sided (1 - alpha) lower bound of b is above 0 AND b >= log(1 + theta_eff)
- improvement:  the same with the sign turned
- inconclusive: |b| >= log(1 + theta) but the above does not hold (too noisy to tell: more data would decide),
                or the standard error cannot be estimated (fewer than two pairs/rounds)
- unchanged:    otherwise (no change of at least theta was seen; the interval says how sure)

`tolerance_verdict` is the rule for near-deterministic metrics (memory): compare ranges over rounds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from perfci.stats.logratio import LogRatio

REGRESSION = "regression"
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"
INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Decision:
    verdict: str
    bound: float  # one-sided bound of the ratio on the side of the verdict's concern (worse side unless improvement)
    threshold: float  # effective threshold used (fraction)


def effective_threshold(theta: float, se: float, noise_factor: float = 3.0) -> float:
    if math.isnan(se):
        return theta
    return max(theta, math.expm1(noise_factor * se))


def decide(
    est: LogRatio, theta: float, alpha: float, higher_is_better: bool = False, noise_factor: float = 3.0
) -> Decision:
    """Classify one estimate (see the module docstring for the rule)."""
    if theta < 0 or not 0 < alpha < 1:
        raise ValueError("theta must be >= 0 and alpha in (0, 1)")
    sign = -1.0 if higher_is_better else 1.0
    b = sign * est.log_ratio
    practical = math.log1p(theta)
    if math.isnan(est.se):  # no spread estimate: nothing can be excluded
        return Decision(INCONCLUSIVE, math.nan, theta)
    theta_eff = effective_threshold(theta, est.se, noise_factor)
    needed = math.log1p(theta_eff)
    t = est.t_quantile(1.0 - alpha)
    worse_low = b - t * est.se  # lower bound of "worseness"
    worse_high = b + t * est.se
    worse_bound = math.exp(sign * worse_low)  # the ratio at the bound, in the metric's own orientation
    if worse_low > 0 and b >= needed:
        return Decision(REGRESSION, worse_bound, theta_eff)
    if worse_high < 0 and -b >= needed:
        return Decision(IMPROVEMENT, math.exp(sign * worse_high), theta_eff)
    if abs(b) >= practical and b != 0.0:
        return Decision(INCONCLUSIVE, worse_bound, theta_eff)
    return Decision(UNCHANGED, worse_bound, theta_eff)


def tolerance_verdict(
    baseline: Sequence[float],
    candidate: Sequence[float],
    tolerance: float,
    slack: float = 0.0,
    higher_is_better: bool = False,
) -> str:
    """Near-deterministic metrics: values per round, compared by their ranges.

    Worse (regression) when every candidate value is beyond every baseline value by more than `tolerance`
    (relative) plus `slack` (absolute, in the metric's unit); better likewise; inconclusive when the medians
    differ by that much but the ranges overlap; unchanged otherwise.
    """
    if not baseline or not candidate:
        raise ValueError("tolerance_verdict needs values on both sides")
    if higher_is_better:
        baseline = [-x for x in baseline]
        candidate = [-x for x in candidate]

    def beyond(x: float, ref: float) -> bool:  # x worse than ref by more than the tolerance
        return x > ref + abs(ref) * tolerance + slack

    if beyond(min(candidate), max(baseline)):
        return REGRESSION
    if beyond(min(baseline), max(candidate)):
        return IMPROVEMENT
    mb, mc = sorted(baseline)[len(baseline) // 2], sorted(candidate)[len(candidate) // 2]
    if beyond(mc, mb) or beyond(mb, mc):
        return INCONCLUSIVE
    return UNCHANGED
