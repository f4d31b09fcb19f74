"""Point estimates and intervals for one sample of measurements.

No scipy at import time: the worker process imports this module (through the timing code) and every round
pays for its imports; the binomial tail is computed exactly with integers instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist


def median(xs: Sequence[float]) -> float:
    if not xs:
        raise ValueError("median of an empty sequence")
    return sorted_median(sorted(xs))


def geometric_mean(xs: Sequence[float]) -> float:
    """exp of the mean log (`statistics.geometric_mean` of Python 3.11, the same float, without its per-call
    wrappers: two per row of a comparison). Positive values only."""
    if not xs:
        raise ValueError("geometric mean of an empty sequence")
    return math.exp(math.fsum(map(math.log, xs)) / len(xs))


def sorted_median(s: Sequence[float]) -> float:
    """The median of values already in ascending order (`median` without the sort)."""
    n = len(s)
    if not n:
        raise ValueError("median of an empty sequence")
    mid = n // 2
    return s[mid] if n % 2 else 0.5 * (s[mid - 1] + s[mid])


def quantile(xs: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (type 7, as numpy's default)."""
    if not xs:
        raise ValueError("quantile of an empty sequence")
    return sorted_quantile(sorted(xs), q)


def sorted_quantile(s: Sequence[float], q: float) -> float:
    """`quantile` of values already in ascending order."""
    if not s:
        raise ValueError("quantile of an empty sequence")
    if not 0.0 <= q <= 1.0:
        raise ValueError("q must lie in [0, 1]")
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median_ci(xs: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free interval for the median from order statistics (binomial, symmetric ranks).

    With too few values for the requested confidence, returns (min, max).
    """
    if not xs:
        raise ValueError("median_ci of an empty sequence")
    s = sorted(xs)
    n = len(s)
    alpha = 1.0 - confidence
    # largest k with P(Bin(n, 1/2) <= k - 1) <= alpha / 2: then [x_(k), x_(n-k+1)] covers >= confidence
    k = _order_rank(n, alpha / 2.0)
    if k < 1:
        return s[0], s[-1]
    return s[k - 1], s[n - k]


def _order_rank(n: int, tail: float) -> int:
    """Largest k <= n // 2 with P(Bin(n, 1/2) <= k - 1) <= tail (the float recurrence is exact enough for
    n <= 1000; beyond, the normal approximation). Cheap: the timing loop calls it after every sample."""
    if n > 1000:
        z = NormalDist().inv_cdf(tail)
        return max(0, min(n // 2, math.floor((n + z * math.sqrt(n)) / 2.0)))
    pmf = 0.5**n
    cdf, k = 0.0, 0
    while k < n // 2:
        cdf += pmf  # P(Bin <= k)
        if cdf > tail * (1.0 + 1e-12):
            break
        pmf *= (n - k) / (k + 1.0)
        k += 1
    return k


def relative_halfwidth(xs: Sequence[float], confidence: float = 0.95) -> float:
    """Half the width of the median's interval, relative to the median."""
    lo, hi = median_ci(xs, confidence)
    m = median(xs)
    return math.inf if m <= 0 else (hi - lo) / (2.0 * m)


def coefficient_of_variation(xs: Sequence[float]) -> float:
    n = len(xs)
    if n < 2:
        return math.nan
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    return sd / mean if mean else math.nan
