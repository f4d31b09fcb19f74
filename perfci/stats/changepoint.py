"""Change points in a metric's history: binary segmentation on log values with a two-sample t criterion.

For a series x_1..x_n (one value per run, in time order) the candidate split k maximises the pooled
two-sample |t| between log(x_1..x_k) and log(x_k+1..x_n), with at least `min_size` points per side.
The split is accepted when its p-value, Bonferroni-corrected for the number of candidate positions looked
at, is below `alpha`, AND the ratio of geometric means moves by at least `min_effect` (a statistically
clear 0.5% shift is not news for a trend report). Accepted splits are searched again on both sides.
Pure: no I/O, deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ChangePoint:
    index: int  # first index of the new regime
    before: float  # geometric mean of the segment before
    after: float  # geometric mean of the segment after
    ratio: float  # after / before
    p_value: float  # Bonferroni-corrected


def _pooled_t(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """(t, two-sided p) for mean(b) - mean(a), Student's t with pooled variance (exact for a stationary normal
    series, the null hypothesis here; Welch's approximation is liberal with 3-point segments)."""
    na, nb = len(a), len(b)
    ma, mb = sum(a) / na, sum(b) / nb
    ss = sum((x - ma) ** 2 for x in a) + sum((x - mb) ** 2 for x in b)
    dof = na + nb - 2
    diff = mb - ma
    se2 = ss / dof * (1.0 / na + 1.0 / nb)
    if se2 <= 0:
        return (math.inf if diff else 0.0), (0.0 if diff else 1.0)
    from scipy import stats as sps  # lazily: importing scipy costs every CLI command about a second

    t = diff / math.sqrt(se2)
    return t, float(2.0 * sps.t.sf(abs(t), dof))


def _best_split(logs: Sequence[float], min_size: int) -> tuple[int, float, float] | None:
    """The split with the largest |t|. Within one segment every split has the same degrees of freedom, so the
    largest |t| is also the smallest p: |t| is scanned with prefix sums (linear in the segment's length), and the
    p-value is computed once, exactly, for the winner."""
    n = len(logs)
    if n < 2 * min_size:
        return None
    centre = sum(logs) / n  # centred values keep the prefix sums of squares free of cancellation
    s1, s2 = [0.0], [0.0]
    for x in logs:
        s1.append(s1[-1] + (x - centre))
        s2.append(s2[-1] + (x - centre) ** 2)
    dof = n - 2
    best_k, best_t = -1, -1.0
    for k in range(min_size, n - min_size + 1):
        na, nb = k, n - k
        sa, sb = s1[k], s1[n] - s1[k]
        ss = (s2[k] - sa * sa / na) + (s2[n] - s2[k] - sb * sb / nb)
        diff = sb / nb - sa / na
        se2 = max(ss, 0.0) / dof * (1.0 / na + 1.0 / nb)
        t = abs(diff) / math.sqrt(se2) if se2 > 1e-24 else (math.inf if abs(diff) > 1e-12 else 0.0)
        if t > best_t:
            best_k, best_t = k, t
    t, p = _pooled_t(logs[:best_k], logs[best_k:])
    return best_k, t, p


def detect_change_points(
    values: Sequence[float], min_size: int = 3, alpha: float = 0.01, min_effect: float = 0.03
) -> list[ChangePoint]:
    """Change points of a positive series, in index order."""
    if min_size < 2:
        raise ValueError("min_size must be at least 2")
    if any(v <= 0 for v in values):
        raise ValueError("values must be positive")
    logs = [math.log(v) for v in values]
    found: list[int] = []

    def search(lo: int, hi: int) -> None:
        segment = logs[lo:hi]
        if len(segment) < 2 * min_size:
            return
        best = _best_split(segment, min_size)
        if best is None:
            return
        k, _, p = best
        candidates = len(segment) - 2 * min_size + 1
        before = sum(segment[:k]) / k
        after = sum(segment[k:]) / (len(segment) - k)
        if min(1.0, p * candidates) < alpha and abs(math.exp(after - before) - 1.0) >= min_effect:
            found.append(lo + k)
            search(lo, lo + k)
            search(lo + k, hi)

    search(0, len(logs))
    points = sorted(found)
    bounds = [0, *points, len(logs)]
    out = []
    for i, idx in enumerate(points):
        left, right = logs[bounds[i] : idx], logs[idx : bounds[i + 2]]
        _, p = _pooled_t(left, right)
        b, a = math.exp(sum(left) / len(left)), math.exp(sum(right) / len(right))
        out.append(ChangePoint(idx, b, a, a / b, min(1.0, p * (len(left) + len(right) - 2 * min_size + 1))))
    return out
