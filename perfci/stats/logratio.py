"""Estimates of a candidate / baseline ratio on the log scale, from per-round values (the unit of replication).

- `paired_log_ratio`: A and B rounds run as pairs (random order within each pair, same machine, same job):
  d_i = log(B_i / A_i), estimate mean(d), standard error sd(d) / sqrt(n), n - 1 degrees of freedom.
  `paired_differences` takes the d_i themselves; `step_log_ratio` is the d_i of a lockstep pair, from its
  samples taken step by step (A's k-th sample and B's k-th sample ran one right after the other).
- `unpaired_log_ratio`: two separate sets of rounds (e.g. two CI jobs): difference of mean logs, Welch standard
  error, plus a *job term*: rounds of one job share that job's machine state (another host of the same class,
  another neighbour, clock state), which more rounds do not average away. With `job_noise` = the standard
  deviation of that per-job shift on the log scale, the standard error becomes
  sqrt(s_a^2/n_a + s_b^2/n_b + 2 * job_noise^2) (each side has its own job shift).

The result is a `LogRatio`: pure data with its own bounds. Nothing here reads clocks or files.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

from perfci.stats.summary import median

_LOG_MAX = math.log(sys.float_info.max)


def ratio_of(log_ratio: float) -> float:
    """exp of a log ratio, infinity past the largest float: the interval bound of a noisy case with few rounds at
    a high confidence (`--confidence 0.9999999999999999` would end in an OverflowError)."""
    return math.exp(log_ratio) if log_ratio < _LOG_MAX else math.inf


def change_of(log_ratio: float) -> float:
    """expm1 of a log ratio (the relative change, precise near 0), infinity past the largest float."""
    return math.expm1(log_ratio) if log_ratio < _LOG_MAX else math.inf


@dataclass(frozen=True)
class LogRatio:
    """Estimate of log(candidate / baseline) with its standard error and degrees of freedom.

    `se` is nan when there are too few values to estimate it (fewer than two pairs, or than two rounds a side).
    """

    log_ratio: float
    se: float
    dof: float
    n_baseline: int
    n_candidate: int

    @property
    def ratio(self) -> float:
        return ratio_of(self.log_ratio)

    def t_quantile(self, p: float) -> float:
        if math.isnan(self.se) or self.dof <= 0:
            return math.nan
        # scipy.special's ufuncs are what scipy.stats' t.ppf and norm.ppf compute (the same values), without their
        # per-call argument machinery (~0.1 ms, paid per row of a 20,000-case comparison) or scipy.stats' import
        # (~0.7 s). Imported lazily (importing scipy costs every CLI command time), once (`_quantiles`).
        return _t_quantile(self.dof, p)

    def lower(self, alpha: float) -> float:
        """One-sided (1 - alpha) lower confidence bound of the ratio."""
        return ratio_of(self.log_ratio - self.t_quantile(1.0 - alpha) * self.se)

    def upper(self, alpha: float) -> float:
        """One-sided (1 - alpha) upper confidence bound of the ratio."""
        return ratio_of(self.log_ratio + self.t_quantile(1.0 - alpha) * self.se)

    def interval(self, confidence: float) -> tuple[float, float]:
        """Two-sided interval of the ratio at `confidence`."""
        half = self.t_quantile(0.5 + confidence / 2.0) * self.se
        return ratio_of(self.log_ratio - half), ratio_of(self.log_ratio + half)


@lru_cache(maxsize=256)  # a row's decision, interval and detectable change ask for the same quantile thrice
def _t_quantile(dof: float, p: float) -> float:
    """The Student t quantile at `dof` degrees of freedom (normal at infinity)."""
    if not 0.0 < p < 1.0:  # the ends as ppf gives them (stdtrit says +inf at p = 0)
        return -math.inf if p == 0.0 else math.inf if p == 1.0 else math.nan
    stdtrit, ndtri = _quantiles()
    if math.isinf(dof):
        return float(ndtri(p))
    return float(stdtrit(dof, p))


def pairs_to_reach(
    half: float, pairs: int, confidence: float, target: float, cap: int = 10_000, spread_bound: float = 0.0
) -> float:
    """Pairs in all at which a paired interval, now `half` wide each way (log scale) at `pairs` pairs and two-sided
    `confidence`, is projected to be at most `target` wide each way: its spread per pair held, t_{n-1} / sqrt(n)
    followed as n grows (the t quantile falls with the pairs, which a plain sqrt(n) projection leaves out).
    With `spread_bound` q > 0 the spread is taken at its lower confidence bound q (chi-square): a projection that
    gives up only where even a smaller spread than the one estimated would not do (from 4 pairs the estimate is
    within x0.6..x3.7 of the true spread only 90% of the time). `inf` where even `cap` pairs would not do."""
    if pairs < 2 or half <= 0.0 or target <= 0.0:
        return math.inf if target <= 0.0 or pairs < 2 else float(pairs)
    p = 0.5 + confidence / 2.0
    spread = half * math.sqrt(pairs) / _t_quantile(pairs - 1, p)
    if spread_bound > 0.0:
        spread *= math.sqrt((pairs - 1) / _chi2_upper(pairs - 1, spread_bound))
        half = _t_quantile(pairs - 1, p) * spread / math.sqrt(pairs)
    if half <= target:
        return float(pairs)
    n = pairs
    while n < cap:
        n = min(cap, n * 2)
        if _t_quantile(n - 1, p) * spread / math.sqrt(n) <= target:
            low, high = n // 2, n  # the half-width falls with n: bisect between the last two doublings
            while high - low > 1:
                mid = (low + high) // 2
                if _t_quantile(mid - 1, p) * spread / math.sqrt(mid) <= target:
                    high = mid
                else:
                    low = mid
            return float(high)
    return math.inf


@cache
def _quantiles() -> tuple[Callable[[float, float], float], Callable[[float], float]]:
    """scipy.special's Student t and normal quantile functions (`stdtrit`, `ndtri`), imported on first use."""
    from scipy import special

    return special.stdtrit, special.ndtri


@lru_cache(maxsize=64)
def _chi2_upper(dof: float, q: float) -> float:
    """The chi-square quantile at `dof` degrees of freedom that a draw stays below with probability `q`."""
    from scipy import special

    return float(special.chdtri(dof, 1.0 - q))


def _logs(xs: Sequence[float], name: str) -> list[float]:
    if not xs:
        raise ValueError(f"{name}: no values")
    if min(xs) <= 0 or not all(math.isfinite(x) for x in xs):
        raise ValueError(f"{name}: values must be positive and finite")
    return [math.log(x) for x in xs]


def _mean_var(v: Sequence[float]) -> tuple[float, float]:
    n = len(v)
    m = sum(v) / n
    return m, (sum((x - m) ** 2 for x in v) / (n - 1) if n > 1 else math.nan)


def trimmed_mean_se(d: Sequence[float], trim: float) -> tuple[float, float, float]:
    """Yuen's trimmed mean of `d` with its standard error and degrees of freedom.

    g = floor(trim * n) values are cut from each end; the standard error comes from the winsorized variance:
    se = sqrt((n - 1) * s_w^2 / (h * (h - 1))), h = n - 2g, dof = h - 1. With g = 0 it is the ordinary mean,
    sd / sqrt(n) and n - 1. Returns nan se when h < 2.
    """
    if not 0.0 <= trim < 0.5:
        raise ValueError("trim must lie in [0, 0.5)")
    n = len(d)
    s = sorted(d)
    g = math.floor(trim * n)
    h = n - 2 * g
    mean = sum(s[g : n - g]) / h
    if h < 2:
        return mean, math.nan, math.nan
    w = [s[g]] * g + s[g : n - g] + [s[n - g - 1]] * g
    _, var_w = _mean_var(w)
    return mean, math.sqrt((n - 1) * var_w / (h * (h - 1))), float(h - 1)


def paired_differences(d: Sequence[float], trim: float = 0.0) -> LogRatio:
    """Paired estimate from the per-pair differences d_i = log(B_i / A_i), baseline and candidate of pair i
    measured as one pair."""
    if not d or not all(math.isfinite(x) for x in d):
        raise ValueError("paired_differences needs finite differences")
    n = len(d)
    mean, se, dof = trimmed_mean_se(list(d), trim)
    return LogRatio(mean, se, dof, n, n)


def narrower(first: LogRatio, second: LogRatio, confidence: float) -> LogRatio:
    """The estimate with the narrower two-sided interval at `confidence` (`first` on a tie or where `second` has
    no standard error). For two estimates of the same pairs, paired and unpaired, the choice rests on the sample
    spreads alone (the differences' and each side's), which for normal values are independent of the sample
    means: the chosen interval keeps its coverage."""
    if math.isnan(second.se) or second.se <= 0:
        return first
    if math.isnan(first.se) or first.se <= 0:
        return second
    a = first.t_quantile(0.5 + confidence / 2.0) * first.se
    b = second.t_quantile(0.5 + confidence / 2.0) * second.se
    return second if b < a else first


def step_log_ratio(baseline: Sequence[float], candidate: Sequence[float]) -> float:
    """One lockstep pair's log(B / A) from its samples step by step: the median over k of log(B_k / A_k), where
    A_k and B_k are the two sides' k-th samples, taken one right after the other (in random order).

    Why not log(median(B) / median(A)): a machine whose speed moves between two levels every few seconds (a
    shared VM: a neighbour on the other hyperthread comes and goes) puts the two medians in different mixtures
    of the levels; neighbouring samples almost always share one level, so their ratios do not see it (measured:
    per-pair sd of 3-4.6% for the ratio of medians against 1.1-1.6% for the median of step ratios on the same
    pairs, docs/compare.md)."""
    if len(baseline) != len(candidate) or not baseline:
        raise ValueError("step_log_ratio needs as many baseline as candidate samples, at least one")
    return median([b - a for a, b in zip(_logs(baseline, "baseline"), _logs(candidate, "candidate"), strict=True)])


def unpaired_log_ratio(baseline: Sequence[float], candidate: Sequence[float], job_noise: float = 0.0) -> LogRatio:
    """Unpaired estimate (difference of mean logs), Welch standard error plus the job term (see module doc).

    Degrees of freedom are Welch-Satterthwaite's for the sampled part (the job term is taken as known), which
    errs on the wide side.
    """
    if job_noise < 0:
        raise ValueError("job_noise must be >= 0")
    la, lb = _logs(baseline, "baseline"), _logs(candidate, "candidate")
    (ma, va), (mb, vb) = _mean_var(la), _mean_var(lb)
    na, nb = len(la), len(lb)
    if na < 2 or nb < 2:
        return LogRatio(mb - ma, math.nan, math.nan, na, nb)
    sampled = va / na + vb / nb
    se = math.sqrt(sampled + 2.0 * job_noise**2)
    welch = (va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1)
    dof = sampled**2 / welch if welch > 0 else math.inf
    return LogRatio(mb - ma, se, dof, na, nb)
