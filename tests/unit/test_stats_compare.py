"""The comparison statistics: hand-computed values, seeded simulations and hypothesis properties."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfci.stats.decision import cutoff, decide, effective_threshold, tolerance_interval, tolerance_verdict
from perfci.stats.logratio import LogRatio, paired_differences, trimmed_mean_se, unpaired_log_ratio

positive = st.floats(min_value=1e-6, max_value=1e3, allow_nan=False)


def paired_log_ratio(baseline: list[float], candidate: list[float], trim: float = 0.0) -> LogRatio:
    """The paired estimate of values measured in pairs (baseline[i] with candidate[i])."""
    return paired_differences([math.log(b / a) for a, b in zip(baseline, candidate, strict=True)], trim)


def test_paired_hand_values() -> None:
    # d = log(2), log(2), log(4) -> mean = (2 ln2 + 2 ln2)/3 ... computed by hand below
    est = paired_log_ratio([1.0, 1.0, 1.0], [2.0, 2.0, 4.0])
    d = [math.log(2), math.log(2), math.log(4)]
    mean = sum(d) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / 2)
    assert est.log_ratio == pytest.approx(mean)
    assert est.se == pytest.approx(sd / math.sqrt(3))
    assert est.dof == 2 and est.n_baseline == est.n_candidate == 3
    # one-sided 99% lower bound with t(0.99, 2) = 6.964557
    assert est.lower(0.01) == pytest.approx(math.exp(mean - 6.964557 * sd / math.sqrt(3)), rel=1e-5)


def test_yuen_trimmed_mean_hand_values() -> None:
    # n = 10, trim 0.2 -> g = 2, h = 6; sorted d = 0..9 -> trimmed mean of 2..7 = 4.5
    d = [float(x) for x in (9, 0, 8, 1, 7, 2, 6, 3, 5, 4)]
    mean, se, dof = trimmed_mean_se(d, 0.2)
    assert mean == 4.5 and dof == 5
    w = [2.0, 2.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 7.0, 7.0]  # winsorized
    mw = sum(w) / 10
    var_w = sum((x - mw) ** 2 for x in w) / 9
    assert se == pytest.approx(math.sqrt(9 * var_w / (6 * 5)))
    assert trimmed_mean_se(d, 0.0) == pytest.approx((4.5, math.sqrt(sum((x - 4.5) ** 2 for x in d) / 9 / 10), 9))


def test_trimming_ignores_one_wild_pair() -> None:
    base = [1.0] * 9 + [1.0]
    cand = [1.05, 1.049, 1.051, 1.05, 1.052, 1.048, 1.05, 1.05, 1.05, 3.0]  # one pair saw a busy neighbour
    plain, robust = paired_log_ratio(base, cand), paired_log_ratio(base, cand, trim=0.2)
    assert robust.ratio == pytest.approx(1.05, abs=0.002)
    assert robust.se < plain.se / 10


def test_unpaired_job_noise_widens_the_interval() -> None:
    a, b = [1.0, 1.01, 0.99, 1.0], [1.1, 1.11, 1.09, 1.1]
    steady, noisy = unpaired_log_ratio(a, b), unpaired_log_ratio(a, b, job_noise=0.1)
    assert steady.log_ratio == noisy.log_ratio
    assert noisy.se == pytest.approx(math.sqrt(steady.se**2 + 2 * 0.1**2))
    assert noisy.lower(0.01) < 1.0 < steady.lower(0.01)


def test_too_few_values_give_nan_and_inconclusive() -> None:
    est = paired_log_ratio([1.0], [2.0])
    assert math.isnan(est.se)
    assert decide(est, 0.03, 0.01).verdict == "inconclusive"
    assert math.isnan(unpaired_log_ratio([1.0], [1.0, 2.0]).se)


def _est(log_ratio: float, se: float, dof: float = 10) -> LogRatio:
    return LogRatio(log_ratio, se, dof, 11, 11)


def test_decision_rule_cases() -> None:
    # clear slowdown of 10%, tiny noise: regression
    d = decide(_est(math.log(1.10), 0.005), 0.03, 0.01)
    assert d.verdict == "regression" and d.bound > 1.0 and d.threshold == 0.03
    # established but below theta (and at least theta / 3): slower; below theta / 3: unchanged
    assert decide(_est(math.log(1.01), 0.001), 0.03, 0.01).verdict == "slower"
    assert decide(_est(math.log(1.005), 0.001), 0.03, 0.01).verdict == "unchanged"
    # estimate beyond theta, bound not above 1: inconclusive
    assert decide(_est(math.log(1.05), 0.03), 0.03, 0.01).verdict == "inconclusive"
    # improvement
    assert decide(_est(math.log(0.8), 0.005), 0.03, 0.01).verdict == "improvement"
    # higher-is-better metric: the same ratio is a loss
    assert decide(_est(math.log(0.8), 0.005), 0.03, 0.01, higher_is_better=True).verdict == "regression"
    # noise raises the bar: 3 * se = 6% > theta, estimate 5% with a bound above 1 -> inconclusive
    d = decide(_est(math.log(1.05), 0.02, dof=1000), 0.03, 0.01)
    assert d.verdict == "inconclusive" and d.threshold == pytest.approx(math.expm1(0.06))
    assert effective_threshold(0.03, math.nan) == 0.03


def test_tolerance_rule() -> None:
    mb = 2**20
    assert tolerance_verdict([100.0 * mb] * 3, [100.0 * mb] * 3, 0.01, mb) == "unchanged"
    # certain changes below the margin (beyond the 1 MiB floor) get words, as a timed metric's
    assert tolerance_verdict([100.0 * mb] * 3, [101.5 * mb] * 3, 0.02, mb) == "slower"
    assert tolerance_verdict([100.0 * mb] * 3, [98.5 * mb] * 3, 0.02, mb) == "faster"
    assert tolerance_verdict([100.0 * mb] * 3, [100.5 * mb] * 3, 0.02, mb) == "unchanged"  # within the floor
    assert tolerance_verdict([100.0 * mb, 101 * mb], [100.5 * mb] * 2, 0.01, mb) == "unchanged"  # ranges overlap
    assert tolerance_verdict([100.0 * mb] * 3, [103.0 * mb] * 3, 0.01, mb) == "regression"  # certain 3% growth
    assert tolerance_verdict([100.0 * mb] * 3, [110.0 * mb] * 3, 0.01, mb) == "regression"
    assert tolerance_verdict([100.0 * mb] * 3, [90.0 * mb] * 3, 0.01, mb) == "improvement"
    # medians differ beyond tolerance but the ranges overlap
    assert tolerance_verdict([100.0 * mb, 100 * mb, 120 * mb], [100.0 * mb, 110 * mb, 111 * mb], 0.01, mb) == (
        "inconclusive"
    )
    assert tolerance_verdict([10.0], [9.0], 0.01, 0.0, higher_is_better=True) == "regression"


def test_tolerance_interval_by_ratio_and_by_difference() -> None:
    """By ratio: extremes over extremes. By difference (sizes): the rounds' differences over the baseline's median,
    so that a figure whose rounds read nothing (the 1-byte stand-in for 0) or a page gives +-a page, not x12288."""
    kib = 1024.0
    assert tolerance_interval([100.0, 102.0], [99.0, 101.0]) == pytest.approx((99 / 102, 101 / 100))
    assert tolerance_interval([0.0, 1.0], [1.0]) == (1.0, None)  # no lowest baseline to divide by
    base, cand = [1.0, 12 * kib, 12 * kib], [1.0, 8 * kib, 12 * kib]
    assert tolerance_interval(base, cand)[1] == pytest.approx(12 * kib)  # 12 KiB over 1 byte
    low, high = tolerance_interval(base, cand, by_difference=True)
    assert 12 * kib * (low - 1) == pytest.approx(1.0 - 12 * kib)  # lowest candidate minus highest baseline
    assert 12 * kib * (high - 1) == pytest.approx(12 * kib - 1.0)  # highest candidate minus lowest baseline
    mb = 2.0**20  # an ordinary size: the two readings agree to a few parts in a thousand
    sizes = ([400 * mb, 401 * mb, 400.5 * mb], [400.2 * mb, 401.1 * mb])
    by_ratio, by_diff = tolerance_interval(*sizes), tolerance_interval(*sizes, by_difference=True)
    assert by_ratio == pytest.approx(by_diff, abs=3e-3)
    assert tolerance_interval([0.0], [5.0], by_difference=True) == (None, None)  # a median of 0: no ratio


def _aa_false_alarm_rate(trials: int, n: int, looks: int, seed: int) -> float:
    """Paired rule under H0 with heavy-tailed pair noise (20% wild pairs), Bonferroni over looks."""
    rng = random.Random(seed)
    alarms = 0
    for _ in range(trials):
        a: list[float] = []
        b: list[float] = []
        for _look in range(looks):
            for _ in range(n):
                wild = rng.random() < 0.2
                a.append(math.exp(rng.gauss(0, 0.02) + (0.4 if wild and rng.random() < 0.5 else 0.0)))
                b.append(math.exp(rng.gauss(0, 0.02) + (0.4 if wild and rng.random() < 0.5 else 0.0)))
            # theta = 0: only the bound protects, so this measures alpha itself
            if decide(paired_log_ratio(a, b, 0.2), 0.0, 0.01 / looks, noise_factor=0.0).verdict == "regression":
                alarms += 1
                break
    return alarms / trials


def test_cutoff_hand_values() -> None:
    # catch = 0.5 is the plain rule: the cut-off is theta itself (log scale)
    assert cutoff(0.03, 0.004, 0.5) == pytest.approx(math.log1p(0.03))
    # catch = 0.75: theta minus the 75% normal quantile (0.67449) times se
    assert cutoff(0.03, 0.004, 0.75) == pytest.approx(0.0295588 - 0.67449 * 0.004, abs=1e-6)
    # the noise floor holds: with se = 2% the cut-off stays at 3 se = 6%
    assert cutoff(math.expm1(0.06), 0.02, 0.75) == pytest.approx(0.06)
    assert cutoff(0.03, math.nan, 0.75) == pytest.approx(math.log1p(0.03))


def test_catch_rule_flags_a_change_just_below_theta() -> None:
    est = _est(math.log(1.028), 0.004, dof=1000)  # +2.8%, lower bound far above 0
    plain = decide(est, 0.03, 0.005, catch=0.5)
    assert plain.verdict == "slower"  # established, below theta
    d = decide(est, 0.03, 0.005, catch=0.75)
    assert d.verdict == "regression" and d.threshold == 0.03
    assert d.cutoff == pytest.approx(math.expm1(0.0295588 - 0.67449 * 0.004), abs=1e-6)
    # the same just below the cut-off is slower (not a regression); catch outside [0.5, 1) is refused
    assert decide(_est(math.log(1.026), 0.004, dof=1000), 0.03, 0.005, catch=0.75).verdict == "slower"
    with pytest.raises(ValueError):
        decide(est, 0.03, 0.005, catch=0.4)


def _paired_rate(factor: float, catch: float, trials: int, seed: int) -> float:
    rng = random.Random(seed)
    hits = 0
    for _ in range(trials):  # 10 pairs, per-pair sd 1.27% -> standard error ~0.4% (lockstep A/B on the CI VM)
        a = [math.exp(rng.gauss(0, 0.009)) for _ in range(10)]
        b = [math.exp(math.log(factor) + rng.gauss(0, 0.009)) for _ in range(10)]
        hits += decide(paired_log_ratio(a, b), 0.03, 0.01 / 2, catch=catch).verdict == "regression"
    return hits / trials


def test_seeded_power_at_theta_follows_catch() -> None:
    """A change of exactly theta is flagged about `catch` of the time; one of 2% rarely; none never."""
    n = 2000
    tol = 3 * math.sqrt(0.25 / n)
    assert abs(_paired_rate(1.03, 0.5, n, 11) - 0.5) < tol
    assert abs(_paired_rate(1.03, 0.75, n, 12) - 0.75) < tol + 0.03  # t vs normal quantile: slightly below
    assert _paired_rate(1.02, 0.75, n, 13) < 0.10
    assert _paired_rate(1.00, 0.75, n, 14) == 0.0


def test_seeded_false_alarm_rate_is_at_most_alpha() -> None:
    rate = _aa_false_alarm_rate(trials=3000, n=6, looks=3, seed=5)
    assert rate <= 0.01 + 3 * math.sqrt(0.01 * 0.99 / 3000)  # alpha plus three binomial standard errors


def test_seeded_power_at_ten_percent() -> None:
    rng = random.Random(3)
    hits = 0
    for _ in range(300):
        a = [math.exp(rng.gauss(0, 0.02)) for _ in range(10)]
        b = [math.exp(math.log(1.10) + rng.gauss(0, 0.02)) for _ in range(10)]
        hits += decide(paired_log_ratio(a, b, 0.2), 0.03, 0.01 / 3).verdict == "regression"
    assert hits / 300 > 0.95


@given(st.lists(st.tuples(positive, positive), min_size=2, max_size=30), st.floats(min_value=0.2, max_value=5.0))
def test_paired_is_scale_equivariant(pairs: list[tuple[float, float]], k: float) -> None:
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    est, scaled = paired_log_ratio(a, b, 0.2), paired_log_ratio(a, [x * k for x in b], 0.2)
    assert scaled.log_ratio == pytest.approx(est.log_ratio + math.log(k), abs=1e-9)
    assert scaled.se == pytest.approx(est.se, abs=1e-9) or (math.isnan(est.se) and math.isnan(scaled.se))


@given(st.lists(st.tuples(positive, positive), min_size=3, max_size=30))
def test_swapping_sides_negates_and_mirrors_the_verdict(pairs: list[tuple[float, float]]) -> None:
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    fwd, back = paired_log_ratio(a, b), paired_log_ratio(b, a)
    assert back.log_ratio == pytest.approx(-fwd.log_ratio, abs=1e-9)
    # below the threshold but beyond the floor, "slower" and "faster" mirror each other too (hypothesis found
    # three pairs of 417 and 411: faster one way, slower the other, as they should be)
    mirror = {"regression": "improvement", "improvement": "regression", "slower": "faster", "faster": "slower"}
    v1, v2 = decide(fwd, 0.03, 0.01).verdict, decide(back, 0.03, 0.01).verdict
    assert v2 == mirror.get(v1, v1)


@given(st.lists(positive, min_size=2, max_size=20), st.floats(min_value=0.0, max_value=0.3))
def test_identical_sides_are_never_a_regression(xs: list[float], theta: float) -> None:
    assert decide(paired_log_ratio(xs, xs), theta, 0.01).verdict == "unchanged"
    assert decide(unpaired_log_ratio(xs, xs, 0.05), theta, 0.01).verdict in ("unchanged", "inconclusive")


@settings(max_examples=50)
@given(st.lists(positive, min_size=3, max_size=15), st.floats(min_value=1.0, max_value=3.0))
def test_interval_contains_estimate_and_bounds_are_ordered(xs: list[float], k: float) -> None:
    rng = random.Random(len(xs))
    ys = [x * k * (1 + 0.01 * rng.random()) for x in xs]
    est = unpaired_log_ratio(xs, ys, 0.02)
    low, high = est.interval(0.98)
    assert low <= est.lower(0.01) * (1 + 1e-12) and est.upper(0.01) <= high * (1 + 1e-12)
    assert low <= est.ratio <= high
