"""The decision rule: from an estimate of log(candidate / baseline) to a verdict. Pure functions.

Let b = log(candidate / baseline) oriented so that b > 0 is *worse* (a slowdown for a lower-is-better metric,
a loss for a higher-is-better one), se its standard error, alpha the one-sided error rate of this look.

- effective threshold: theta_eff = max(theta, exp(noise_factor * se) - 1). theta is the practical threshold (the
  smallest change anyone cares about); the noise term keeps the bar above what an A/A comparison with the same
  data would show (noise_factor = 3: an A/A estimate passes it with probability ~P(t > 3)).
- cut-off:      cut = max(log(1 + theta_eff) - z_catch * se, noise_factor * se), z_catch the `catch` quantile
  of the normal. theta is the smallest change that must be *caught*; a cut-off equal to theta would flag a
  change of exactly theta only when its estimate happens to land above it, i.e. half the time. With catch =
  0.75 a change of theta is flagged ~75% of the time (catch = 0.5 gives cut = log(1 + theta_eff): the plain
  "estimate at least theta" rule). The noise term keeps the cut-off at 3 se or more whatever `catch` is.
- regression:   the one-sided (1 - alpha) lower bound of b is above 0 AND b >= cut
- improvement:  the same with the sign turned
- slower:       the one-sided (1 - alpha) lower bound of b is above 0 (a change is established), b is below
                log(1 + theta) (and not a regression), and b >= log(1 + min_fraction * theta): below the threshold
                but real and large enough to name. The floor (default theta / 3: 1% on CPU) keeps the
                small systematic differences that an A/A comparison with many pairs can establish (warm-up order,
                memory layout; see docs/compare.md) from being called slower.
- faster:       the same with the sign turned
- unchanged:    equivalence established: the two-sided (1 - 2 alpha) interval of b lies inside
                (-log(1 + theta), log(1 + theta))
- inconclusive: everything else: too noisy to tell (more data would decide), an estimate at or past theta that
                is not established, or no standard error (fewer than two pairs/rounds)

`min_detectable` gives the minimum detectable change of an estimate: the true change that this test (one-sided
at alpha) detects with 80% power, (t_{1-alpha} + t_{power}) * se on the log scale, t quantiles at the estimate's
degrees of freedom.

`tolerance_verdict` is the rule for near-deterministic metrics (memory): compare ranges over rounds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from statistics import NormalDist

from perfci.stats.logratio import LogRatio, change_of, ratio_of

REGRESSION = "regression"
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"
INCONCLUSIVE = "inconclusive"
SLOWER = "slower"
FASTER = "faster"
MIN_FRACTION = 1.0 / 3.0  # slower/faster need an estimate of at least this share of theta (module docstring)
POWER = 0.8


@dataclass(frozen=True)
class Decision:
    verdict: str
    bound: float  # one-sided bound of the ratio on the side of the verdict's concern (worse side unless improvement)
    threshold: float  # effective threshold used (fraction)
    cutoff: float = math.nan  # the estimate's cut-off actually applied (fraction, see the module docstring)


def effective_threshold(theta: float, se: float, noise_factor: float = 3.0) -> float:
    if math.isnan(se):
        return theta
    return max(theta, change_of(noise_factor * se))


def cutoff(theta_eff: float, se: float, catch: float = 0.5, noise_factor: float = 3.0) -> float:
    """The estimate's cut-off on the log scale (module docstring): a change of theta_eff is flagged with
    probability ~`catch` once the lower bound clears 0."""
    needed = math.log1p(theta_eff)
    if math.isnan(se):
        return needed
    return max(needed - _normal_quantile(catch) * se, noise_factor * se)


@cache
def _normal_quantile(p: float) -> float:
    """The standard normal's p quantile, computed once per p (a handful of distinct values per comparison)."""
    return NormalDist().inv_cdf(p)


def decide(
    est: LogRatio,
    theta: float,
    alpha: float,
    higher_is_better: bool = False,
    noise_factor: float = 3.0,
    catch: float = 0.5,
    min_fraction: float = MIN_FRACTION,
) -> Decision:
    """Classify one estimate (see the module docstring for the rule)."""
    if theta < 0 or not 0 < alpha < 1:
        raise ValueError("theta must be >= 0 and alpha in (0, 1)")
    if not 0.5 <= catch < 1:
        raise ValueError("catch must be in [0.5, 1)")
    if not 0 <= min_fraction <= 1:
        raise ValueError("min_fraction must be in [0, 1]")
    sign = -1.0 if higher_is_better else 1.0
    b = sign * est.log_ratio
    practical = math.log1p(theta)
    if math.isnan(est.se):  # no spread estimate: nothing can be excluded
        return Decision(INCONCLUSIVE, math.nan, theta)
    theta_eff = effective_threshold(theta, est.se, noise_factor)
    needed = cutoff(theta_eff, est.se, catch, noise_factor)
    cut = change_of(needed)
    t = est.t_quantile(1.0 - alpha)
    worse_low = b - t * est.se  # lower bound of "worseness"
    worse_high = b + t * est.se
    worse_bound = ratio_of(sign * worse_low)  # the ratio at the bound, in the metric's own orientation
    better_bound = ratio_of(sign * worse_high)
    if worse_low > 0 and b >= needed:
        return Decision(REGRESSION, worse_bound, theta_eff, cut)
    if worse_high < 0 and -b >= needed:
        return Decision(IMPROVEMENT, better_bound, theta_eff, cut)
    floor = math.log1p(min_fraction * theta)
    if worse_low > 0 and floor <= b < practical:
        return Decision(SLOWER, worse_bound, theta_eff, cut)
    if worse_high < 0 and floor <= -b < practical:
        return Decision(FASTER, better_bound, theta_eff, cut)
    if -practical <= worse_low and worse_high <= practical:
        return Decision(UNCHANGED, worse_bound, theta_eff, cut)
    return Decision(INCONCLUSIVE, worse_bound, theta_eff, cut)


def min_detectable(est: LogRatio, alpha: float, power: float = POWER) -> float:
    """The minimum detectable change (fraction, 0.011 = 1.1%): the true change that a one-sided test at `alpha`
    on this estimate's standard error and degrees of freedom detects with probability `power`; nan without a
    standard error."""
    if math.isnan(est.se) or not 0 < alpha < 1 or not 0 < power < 1:
        return math.nan
    return change_of((est.t_quantile(1.0 - alpha) + est.t_quantile(power)) * est.se)


def tolerance_interval(
    baseline: Sequence[float], candidate: Sequence[float], by_difference: bool = False
) -> tuple[float | None, float | None]:
    """The range of candidate / baseline over the rounds of a tolerance comparison (module docstring).

    By ratio: (lowest candidate / highest baseline, highest candidate / lowest baseline); None where the divisor
    is 0. By difference (sizes, whose rounds may read 0 or one page): the rounds' differences, lowest candidate
    minus highest baseline and highest candidate minus lowest baseline, over the baseline's median, plus 1, so
    that the baseline's median times (bound - 1) is the difference in the metric's unit. The ratio of a 12 KiB
    figure to a round that read nothing (1 byte) said +144 MiB; its differences say what they are, +-12 KiB.
    """
    if not baseline or not candidate:
        raise ValueError("tolerance_interval needs values on both sides")
    lo_c, hi_c, lo_b, hi_b = min(candidate), max(candidate), min(baseline), max(baseline)
    if by_difference:
        mb = sorted(baseline)[len(baseline) // 2]
        if not mb:
            return None, None
        return 1.0 + (lo_c - hi_b) / mb, 1.0 + (hi_c - lo_b) / mb
    return (lo_c / hi_b if hi_b else None), (hi_c / lo_b if lo_b else None)


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
    differ by that much but the ranges overlap. A change below that margin is still named when it is certain,
    every candidate value beyond every baseline value by more than `slack` (the measurement's floor): `slower`
    (worse: for memory, it grew) or `faster` (better: it shrank), as for timed metrics; unchanged otherwise.
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
    if min(candidate) > max(baseline) + slack:
        return SLOWER
    if max(candidate) < min(baseline) - slack:
        return FASTER
    return UNCHANGED
