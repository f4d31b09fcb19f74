"""When an A/B stops on a CUDA case's steady clock, and how many pairs its next look adds.

A `device.time` row (docs/gpu.md, "Two clocks") is *settled* when its interval (the two-sided 1 - 2 alpha interval
the row carries, alpha split over the planned looks) lies wholly on one side of each practical threshold: inside
(-theta, +theta) (`unchanged`, `slower`, `faster`) or wholly past +theta or -theta (`regression`, `improvement`).
Where the estimate is large enough to be named (at least `slower_min` of theta, stats/decision.py), zero is a
boundary too: an interval of -0.1..+0.9% around a +0.4% estimate has not yet said whether the change is there,
and more pairs name it `slower`. An `inconclusive` row is never settled. Unlike the latency rule
(`orchestrate.needs_more`), an estimate that is merely near the threshold asks for nothing more once its
interval says on which side of it the change lies: a +0.6% kernel change with the interval +0.4..+0.9% is
`slower` and settled at a 1% threshold.

How many pairs the next look adds when only device rows are unsettled: the noise target (nvbench stops a
measurement once the relative standard deviation of its mean reaches a target; here the target is the distance
from the estimate to the threshold the interval still straddles). An interval's half-width w at n pairs shrinks
as sqrt(n), so it clears a boundary at distance d from the estimate after about n * (w / d)^2 pairs; the look
adds that many more, at least `MIN_EXTRA` and at most the plan's `extra`. The t quantile also falls as pairs
are added, so the projection errs on the side of more pairs. Alpha stays split evenly over the planned looks
(Bonferroni holds whatever the size of each look).

A row is *out of reach* when, even at the low end of its spread per pair (the spread's lower 90% confidence
bound: a few pairs' spread is an uncertain estimate), all the pairs the A/B plans (first look plus `extra` per
further look) are projected not to settle it (`stats/logratio.pairs_to_reach`, which follows the t quantile down
as pairs are added): the process-to-process spread of some kernels (one cuDNN depthwise
convolution of ConvNeXt-Tiny on the H200 read 1,858-1,910 us a call by process, +-1.3% per pair, where OPT-125m's
pairs held within 0.1%) would need 40 pairs or more to bound a 1% threshold. Such a case gets no further pairs:
its row keeps the verdict of the look (`inconclusive` where its interval straddles the threshold) with a note
giving its spread and the pairs it would need, and the A/B stops when no other case asks for more.
"""

from __future__ import annotations

import math

from perfci.format.model import MetricComparison, Verdict
from perfci.stats.decision import MIN_FRACTION
from perfci.stats.logratio import pairs_to_reach

REACH_FACTOR = 1.0  # out of reach: projected to need more pairs than this many times the planned pairs
# ... at the spread's lower 90% bound: four pairs' spread is too uncertain to give up on at face value (seen on an
# H100 runner: ConvNeXt-Tiny's head left at 4 pairs as -0.38% [-3.39..+2.72], where an A/A of it settled at 10)
REACH_SPREAD_BOUND = 0.9
MIN_EXTRA = 2  # the fewest pairs a look adds: one pair adds too little to move a Welch interval of a few pairs


def _log_interval(row: MetricComparison) -> tuple[float, float] | None:
    low, high = row.ratio_low, row.ratio_high
    if row.ratio is None or low is None or high is None or low <= 0 or high <= 0:
        return None
    return math.log(low), math.log(high)


def straddled(row: MetricComparison, theta: float, named: float = MIN_FRACTION) -> list[float]:
    """The boundaries strictly inside the row's interval (log scale): +-log(1 + theta), and 0 where the estimate
    is at least `named` x theta away from it; empty for a settled interval."""
    interval = _log_interval(row)
    if interval is None or row.ratio is None:
        return []
    low, high = interval
    edge = math.log1p(theta)
    zero = [0.0] if abs(math.log(row.ratio)) >= math.log1p(named * theta) else []
    return [b for b in (-edge, *zero, edge) if low < b < high]


def device_settled(row: MetricComparison, theta: float, named: float = MIN_FRACTION) -> bool:
    """Whether a `device.time` row is settled at `theta` (module docstring)."""
    if row.verdict is Verdict.INCONCLUSIVE or _log_interval(row) is None:
        return False
    return not straddled(row, theta, named)


def pairs_to_settle(row: MetricComparison, theta: float, pairs: int, extra: int, named: float = MIN_FRACTION) -> int:
    """More pairs that would settle `row` by the noise target (module docstring), within [MIN_EXTRA, extra]."""
    found = _distance(row, theta, named)
    if found is None or pairs < 1:
        return extra
    half, distance = found
    if distance <= half * 1e-3:  # the estimate sits on the threshold: no number of pairs is projected to settle it
        return extra
    needed = math.ceil(pairs * (half / distance) ** 2) - pairs
    return max(MIN_EXTRA, min(extra, needed))


def _distance(row: MetricComparison, theta: float, named: float) -> tuple[float, float] | None:
    """(half-width, distance from the estimate to the nearest boundary its interval straddles), log scale."""
    interval = _log_interval(row)
    if interval is None or row.ratio is None:
        return None
    low, high = interval
    estimate = math.log(row.ratio)
    boundaries = straddled(row, theta, named) or [math.copysign(math.log1p(theta), estimate)]
    return (high - low) / 2.0, min(abs(estimate - b) for b in boundaries)


def out_of_reach(
    row: MetricComparison, theta: float, pairs: int, planned: int, named: float = MIN_FRACTION
) -> float | None:
    """The pairs in all that `row` is projected to need to settle, where that is more than REACH_FACTOR x the
    `planned` pairs (module docstring); None where the plan may settle it, or where the row has no interval."""
    found = _distance(row, theta, named)
    if found is None or row.confidence is None or pairs < 2:
        return None
    half, distance = found
    needed = pairs_to_reach(half, pairs, 2.0 * row.confidence - 1.0, distance, spread_bound=REACH_SPREAD_BOUND)
    return needed if needed > REACH_FACTOR * planned else None


def reach_note(row: MetricComparison, theta: float, pairs: int, needed: float, named: float = MIN_FRACTION) -> str:
    """Why an out-of-reach row got no further pairs: its interval and the pairs it would need."""
    found = _distance(row, theta, named)
    half = found[0] if found else math.nan
    low, high = (row.ratio_low or math.nan), (row.ratio_high or math.nan)
    shown = "more than 10,000" if math.isinf(needed) else f"about {needed:,.0f}"
    return (
        f"its pairs spread too far to settle at the {theta:.1%} threshold: interval {low - 1:+.2%}..{high - 1:+.2%} "
        f"(half-width {math.expm1(half):.2%}) on {pairs} pairs, {shown} pairs needed; no further pairs were taken"
    )
