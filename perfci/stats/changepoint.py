"""Change points in a metric's history, robust to the way CI history really behaves: runners drift for hours
(autocorrelated noise) and now and then a run is an outlier.

Method (benchmarked against others in benchmarks/changepoints.py, manual and figures in docs/changepoints.md):
1. Work on log values. Isolated outliers (beyond the medians of the runs just before and just after them, on the
   same side, by more than `outlier_k` robust standard deviations; the first and last run by their one side)
   are replaced by the nearer of those medians. A level shift is not touched: its first point is close to the
   runs after it.
2. The noise is modelled as AR(1): x_t = m_t + u_t, u_t = phi * u_{t-1} + e_t. `phi` is the lag-1
   autocorrelation of the residuals around the best single mean split, corrected for its small-sample bias
   (Kendall's (1 + 3 phi) / n) and clipped to [0, `max_phi`].
3. Pre-whitening: w_t = x_t - phi * x_{t-1}. A step of size d at k adds d at t = k and (1 - phi) * d after it;
   for each candidate k the least-squares fit of that shape (plus an intercept) gives d and its t statistic.
   The split with the largest |t| is accepted when its p-value from the injected `test` (by default
   Bonferroni-corrected for the candidates looked at) is below `alpha` AND |exp(d) - 1| >= `min_effect`.
   Accepted splits are searched again on both sides (binary segmentation), each side with its own fit.
A plain two-sample t on segment means (the previous method, `mean_shift_points`) treats each run as
independent; under drift that both misses steps and finds false ones. Pure: no I/O, deterministic.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ChangePoint:
    index: int  # first index of the new regime
    before: float  # geometric mean of the segment before
    after: float  # geometric mean of the segment after
    ratio: float  # after / before
    p_value: float  # Bonferroni-corrected


def _t_sf2(t: float, dof: int) -> float:
    """Two-sided p-value of Student's t."""
    if math.isinf(t):
        return 0.0
    from scipy import stats as sps  # lazily: importing scipy costs every CLI command about a second

    return float(2.0 * sps.t.sf(abs(t), dof))


# (|t| of the best split, its degrees of freedom, how many split positions were scanned) -> the p-value of the
# scan, corrected for having picked the best of them. Injected so that another correction (a permutation test, a
# calibrated threshold) can be tried without touching the scan.
SplitTest = Callable[[float, int, int], float]


def bonferroni_t(t: float, dof: int, candidates: int) -> float:
    """Student's t p-value times the number of positions scanned (capped at 1). Nearly exact for the pre-whitened
    scan, whose statistics at neighbouring positions are driven by different innovations."""
    return min(1.0, _t_sf2(t, dof) * max(candidates, 1))


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def clean_outliers(logs: Sequence[float], half_window: int = 3, outlier_k: float = 5.0) -> list[float]:
    """Logs with isolated outliers replaced by the nearer of the medians of their neighbours on either side.

    A point is an outlier when it lies beyond both the median of the `half_window` points before it and the
    median of those after it, on the same side, by more than `outlier_k` robust standard deviations (from the
    median absolute difference between successive runs). The first point of a new level is close to the
    median after it, so a step is left alone. The first and the last run are judged by their one side (at
    least two runs there): left in place, an outlier at either end inflates the noise of every split."""
    n = len(logs)
    diffs = [abs(b - a) for a, b in itertools.pairwise(logs)]
    if n < 2 * half_window + 1 or not diffs:
        return list(logs)
    scale = 1.4826 * _median(diffs) / math.sqrt(2.0)
    if scale <= 0:
        return list(logs)
    out = list(logs)
    for i in range(n):
        left, right = logs[max(0, i - half_window) : i], logs[i + 1 : i + 1 + half_window]
        ends = i in (0, n - 1)
        sides = [_median(side) for side in (left, right) if len(side) >= 2 or (side and not ends)]
        if not sides:
            continue
        lo, hi = min(sides), max(sides)
        limit = outlier_k * scale
        if logs[i] > hi + limit:
            out[i] = hi  # the nearer side: an outlier on the first run of a new level takes that level
        elif logs[i] < lo - limit:
            out[i] = lo
    return out


def _mean_split(logs: Sequence[float], min_size: int) -> tuple[int, float] | None:
    """(k, |t|) of the best split by a two-sample t on the means (prefix sums: linear in the length)."""
    n = len(logs)
    if n < 2 * min_size:
        return None
    centre = sum(logs) / n
    s1, s2 = [0.0], [0.0]
    for x in logs:
        s1.append(s1[-1] + (x - centre))
        s2.append(s2[-1] + (x - centre) ** 2)
    best_k, best_t = -1, -1.0
    for k in range(min_size, n - min_size + 1):
        na, nb = k, n - k
        sa, sb = s1[k], s1[n] - s1[k]
        ss = (s2[k] - sa * sa / na) + (s2[n] - s2[k] - sb * sb / nb)
        diff = sb / nb - sa / na
        se2 = max(ss, 0.0) / (n - 2) * (1.0 / na + 1.0 / nb)
        t = abs(diff) / math.sqrt(se2) if se2 > 1e-24 else (math.inf if abs(diff) > 1e-12 else 0.0)
        if t > best_t:
            best_k, best_t = k, t
    return best_k, best_t


def ar1_phi(logs: Sequence[float], min_size: int = 3, max_phi: float = 0.95) -> float:
    """Lag-1 autocorrelation of the residuals around the best single mean split, clipped to [0, max_phi]."""
    split = _mean_split(logs, min_size)
    k = split[0] if split else len(logs)
    parts = (logs[:k], logs[k:])
    means = [sum(p) / len(p) if p else 0.0 for p in parts]  # once per part (was once per value: quadratic)
    resid = [x - mu for p, mu in zip(parts, means, strict=True) for x in p]
    den = sum(r * r for r in resid)
    if len(resid) < 3 or den <= 1e-24:
        return 0.0
    num = sum(a * b for a, b in itertools.pairwise(resid))
    r1 = num / den
    # the lag-1 autocorrelation of a short series is biased low (Kendall: by about (1 + 3 phi) / n)
    return min(max_phi, max(0.0, r1 + (1.0 + 3.0 * r1) / len(resid)))


@dataclass(frozen=True)
class _Split:
    k: int  # index within the segment of the first point of the new level
    d: float  # step size in log units
    t: float
    dof: int


def _whitened_split(logs: Sequence[float], phi: float, min_size: int) -> _Split | None:
    """The step position with the largest |t| for the step shape in the pre-whitened series."""
    n = len(logs)
    if n < 2 * min_size:
        return None
    w = [logs[t] - phi * logs[t - 1] for t in range(1, n)]  # w[j] belongs to time j + 1
    m = len(w)
    wbar = sum(w) / m
    syy = sum((v - wbar) ** 2 for v in w)
    suffix = [0.0] * (m + 1)  # suffix[j] = sum of w[j:]
    for j in range(m - 1, -1, -1):
        suffix[j] = suffix[j + 1] + w[j]
    c = 1.0 - phi
    best: _Split | None = None
    for k in range(min_size, n - min_size + 1):
        j = k - 1  # w index of time k
        after = m - j - 1
        xbar = (1.0 + c * after) / m
        sxx = (1.0 - xbar) ** 2 + after * (c - xbar) ** 2 + (m - 1 - after) * xbar**2
        sxy = (w[j] - wbar) + c * (suffix[j + 1] - after * wbar)
        d = sxy / sxx
        sse = max(syy - d * sxy, 0.0)
        dof = m - 2
        se2 = sse / dof / sxx if dof > 0 else 0.0
        t = abs(d) / math.sqrt(se2) if se2 > 1e-24 else (math.inf if abs(d) > 1e-12 else 0.0)
        if best is None or t > best.t:
            best = _Split(k, d, t, dof)
    return best


DEFAULT_ALPHA = 0.03  # tuned on seeds 1000-1009 only (docs/changepoints.md)
DEFAULT_MIN_EFFECT = 0.025
DEFAULT_MIN_SIZE = 3  # the fewest runs on each side of a change point


def detect_change_points(
    values: Sequence[float],
    min_size: int = DEFAULT_MIN_SIZE,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    outlier_k: float = 8.0,
    max_phi: float = 0.95,
    test: SplitTest = bonferroni_t,
) -> list[ChangePoint]:
    """Change points of a positive series, in index order.

    `min_size`: the fewest runs a segment may have (so a change point shows `min_size` runs after it at the
    earliest); `alpha`: the most a split's `test` p-value may be; `min_effect`: the smallest step (fitted
    ratio - 1, either way) reported; `outlier_k`: how far (robust SDs) a run must stand out from its neighbours
    on both sides to be taken as an outlier; `max_phi`: the most autocorrelation the noise model assumes.
    docs/changepoints.md gives the method and its measured recall and false change points."""
    if min_size < 2:
        raise ValueError("min_size must be at least 2")
    if any(v <= 0 for v in values):
        raise ValueError("values must be positive")
    logs = clean_outliers([math.log(v) for v in values], outlier_k=outlier_k)
    phi = ar1_phi(logs, min_size, max_phi)
    found: list[tuple[int, float, float]] = []  # (index, d, corrected p)

    def search(lo: int, hi: int) -> None:
        segment = logs[lo:hi]
        best = _whitened_split(segment, phi, min_size)
        if best is None:
            return
        candidates = len(segment) - 2 * min_size + 1
        p = test(best.t, best.dof, candidates)
        if p < alpha and abs(math.exp(best.d) - 1.0) >= min_effect:
            found.append((lo + best.k, best.d, p))
            search(lo, lo + best.k)
            search(lo + best.k, hi)

    search(0, len(logs))
    found.sort()
    bounds = [0, *(f[0] for f in found), len(logs)]
    out = []
    for i, (idx, _, p) in enumerate(found):
        left, right = logs[bounds[i] : idx], logs[idx : bounds[i + 2]]
        before, after = math.exp(sum(left) / len(left)), math.exp(sum(right) / len(right))
        out.append(ChangePoint(idx, before, after, after / before, p))
    return out
