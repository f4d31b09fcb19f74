"""Lockstep pairs compared step by step (stats/logratio.step_log_ratio, compare/decide.step_pairs): seeded
simulations of a machine whose speed jumps between two levels, as a shared VM's does, and the rows they give."""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import replace

import pytest

from perfci.compare.decide import MIN_STEPS, compare_runs, step_pairs
from perfci.compare.policy import DecisionSettings
from perfci.format.model import CaseResult, MetricComparison
from perfci.stats.logratio import paired_differences, step_log_ratio
from tests.conftest import make_case, make_run


def two_level_pair(rng: random.Random, steps: int, slowdown: float) -> tuple[list[float], list[float]]:
    """One lockstep pair: per step, A's and B's per-call times, taken one after the other in random order, on a
    machine that runs at speed 1 or 1.6x slower and switches level with probability 0.08 before each sample
    (about every 6 steps), with 1% noise per sample. B does `slowdown` more work."""
    slow = rng.random() < 0.5
    a: list[float] = []
    b: list[float] = []
    for _ in range(steps):
        for side in rng.sample(("a", "b"), 2):
            if rng.random() < 0.08:
                slow = not slow
            t = 10e-3 * (1.6 if slow else 1.0) * (1 + rng.gauss(0, 0.01))
            (a if side == "a" else b).append(t if side == "a" else t * (1 + slowdown))
    return a, b


def test_step_ratios_do_not_see_a_machine_that_switches_speed() -> None:
    rng = random.Random(20)
    medians, steps = [], []
    for _ in range(400):
        a, b = two_level_pair(rng, 20, 0.025)
        medians.append(math.log(statistics.median(b) / statistics.median(a)))
        steps.append(step_log_ratio(a, b))
    # the ratio of the two sides' medians mixes the levels differently on each side; neighbouring samples do not
    assert statistics.stdev(steps) < statistics.stdev(medians) / 4
    assert statistics.mean(steps) == pytest.approx(math.log(1.025), abs=0.002)  # no bias
    est = paired_differences(steps[:20], trim=0.2)
    low, high = est.interval(0.99)
    assert low < 1.025 < high and high - low < 0.02  # a 2.5% change settled by 20 pairs


def test_step_log_ratio_is_the_median_of_the_step_ratios() -> None:
    a = [1.0, 2.0, 4.0, 1.0]
    b = [1.1, 2.0, 4.4, 1.3]  # ratios 1.1, 1.0, 1.1, 1.3: median of the logs = log(1.1)
    assert step_log_ratio(a, b) == pytest.approx(math.log(1.1))
    assert step_log_ratio([2.0], [3.0]) == pytest.approx(math.log(1.5))
    with pytest.raises(ValueError):
        step_log_ratio([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        step_log_ratio([1.0], [0.0])


def latency_row(base: CaseResult, cand: CaseResult, paired: bool = True) -> MetricComparison:
    comparison = compare_runs(make_run([base]), make_run([cand]), DecisionSettings(), paired=paired)
    return next(r for r in comparison.rows if r.case_id == base.id and r.metric == "latency.median")


def lockstep(case: CaseResult, per_call: list[list[float]]) -> CaseResult:
    rounds = tuple(
        replace(r, samples=tuple(x * r.iterations for x in xs), stop_reason="lockstep")
        for r, xs in zip(case.rounds, per_call, strict=True)
    )
    return replace(case, rounds=rounds)


def test_lockstep_rows_use_step_ratios_and_other_rounds_their_medians() -> None:
    rng = random.Random(7)
    pairs = [two_level_pair(rng, 20, 0.025) for _ in range(12)]
    base = lockstep(make_case("k", 1e-2, rounds=12), [a for a, _ in pairs])
    cand = lockstep(make_case("k", 1e-2, rounds=12, seed=1), [b for _, b in pairs])
    settings = DecisionSettings()
    row = latency_row(base, cand)
    expected = paired_differences([step_log_ratio(a, b) for a, b in pairs], settings.trim)
    assert row.ratio == pytest.approx(expected.ratio, rel=1e-12)
    assert row.noise == pytest.approx(expected.se, rel=1e-12)
    assert row.candidate / row.baseline == pytest.approx(row.ratio, rel=1e-12)  # the columns agree with the change
    assert step_pairs(base, cand).keys() == set(range(12))

    # the same samples from ordinary rounds (not lockstep): the rounds' medians are paired, as before
    plain_b = replace(base, rounds=tuple(replace(r, stop_reason="budget") for r in base.rounds))
    plain_c = replace(cand, rounds=tuple(replace(r, stop_reason="budget") for r in cand.rounds))
    assert step_pairs(plain_b, plain_c) == {}
    plain = latency_row(plain_b, plain_c)
    medians = [math.log(statistics.median(b) / statistics.median(a)) for a, b in pairs]
    assert plain.ratio == pytest.approx(paired_differences(medians, settings.trim).ratio, rel=1e-12)
    assert row.noise < plain.noise  # what the step ratios are for (over many pairs: the first test)


def test_a_pair_with_unequal_or_too_few_steps_compares_its_medians() -> None:
    rng = random.Random(3)
    pairs = [two_level_pair(rng, 10, 0.0) for _ in range(6)]
    pairs[2] = (pairs[2][0], pairs[2][1][:-1])  # a side lost its last sample
    pairs[4] = (pairs[4][0][: MIN_STEPS - 1], pairs[4][1][: MIN_STEPS - 1])
    base = lockstep(make_case("k", 1e-2, rounds=6), [a for a, _ in pairs])
    cand = lockstep(make_case("k", 1e-2, rounds=6, seed=1), [b for _, b in pairs])
    assert sorted(step_pairs(base, cand)) == [0, 1, 3, 5]
    d = [
        step_log_ratio(a, b) if i in (0, 1, 3, 5) else math.log(statistics.median(b) / statistics.median(a))
        for i, (a, b) in enumerate(pairs)
    ]
    assert latency_row(base, cand).ratio == pytest.approx(paired_differences(d, 0.2).ratio, rel=1e-12)
    row = latency_row(base, cand, paired=False)
    assert row.method == "unpaired"  # step ratios only pair a paired comparison's rounds
