"""Variance components of jobs and rounds (perfci/stats/components.py, and the benchmarks' own in
benchmarks/estimators.py): hand values and seeded simulations."""

from __future__ import annotations

import math
import random

import pytest

from benchmarks.estimators import JobComponents, expected_normal_range, job_components, rounds_for_spread
from perfci.stats.components import job_term


def test_hand_values() -> None:
    # two jobs, two rounds each: means 1 and 3, within deviations +-1 -> within var 2 (dof 2), between var 2
    c = job_components([[0.0, 2.0], [2.0, 4.0]])
    assert c.jobs == 2 and c.rounds == 2
    assert c.within_sd == pytest.approx(math.sqrt(2.0))
    assert c.between_sd == pytest.approx(math.sqrt(2.0))
    assert c.job_sd == pytest.approx(1.0)  # sqrt(2 - 2/2)


def test_no_job_term_when_rounds_explain_the_spread() -> None:
    c = job_components([[0.0, 2.0], [0.5, 1.5]])  # means equal: between 0
    assert c.between_sd == 0.0 and c.job_sd == 0.0


def test_needs_two_jobs_of_two_rounds() -> None:
    with pytest.raises(ValueError, match="at least 2 jobs"):
        job_components([[1.0, 2.0], [3.0]])


def test_expected_range_known_values() -> None:
    assert expected_normal_range(2) == pytest.approx(2 / math.sqrt(math.pi), abs=1e-6)
    assert expected_normal_range(5) == pytest.approx(2.3259, abs=1e-4)
    assert expected_normal_range(1) == 0.0


@pytest.mark.parametrize("job_sd", [0.0, 0.03])
def test_simulated_components_are_recovered(job_sd: float) -> None:
    rng = random.Random(7)
    groups = []
    for _ in range(400):
        shift = rng.gauss(0.0, job_sd)
        groups.append([shift + rng.gauss(0.0, 0.10) for _ in range(10)])
    c = job_components(groups)
    assert c.within_sd == pytest.approx(0.10, rel=0.05)
    # the job variance's sampling sd here is about 7e-5 (between-job variance of 400 means of 10 rounds)
    assert c.job_sd**2 == pytest.approx(job_sd**2, abs=2.5e-4)


def test_rounds_for_spread() -> None:
    budget = math.log(1.03) / expected_normal_range(5)
    none = JobComponents(jobs=5, rounds=20, within_sd=0.1, between_sd=0.1, job_sd=budget * 1.01)
    assert rounds_for_spread(none, 0.03, 5) is None
    free = JobComponents(jobs=5, rounds=20, within_sd=0.1, between_sd=0.1, job_sd=0.0)
    n = rounds_for_spread(free, 0.03, 5)
    assert n == pytest.approx((0.1 / budget) ** 2)
    # with that many rounds the expected range of 5 job means is exactly the 3% budget
    assert expected_normal_range(5) * 0.1 / math.sqrt(n) == pytest.approx(math.log(1.03))


def test_unequal_rounds_use_the_harmonic_mean() -> None:
    rng = random.Random(11)
    groups = [[rng.gauss(0.0, 0.10) for _ in range(n)] for n in [5, 40] * 300]  # no job term at all
    c = job_components(groups)
    assert c.rounds == pytest.approx(2 / (1 / 5 + 1 / 40))
    assert c.job_sd**2 == pytest.approx(0.0, abs=2.5e-4)


def test_job_term_hand_values() -> None:
    # means 0, 0.1, 0.2: variance 0.01; the rounds explain 0.1^2 / 4 = 0.0025 of it
    t = job_term([0.0, 0.1, 0.2], [0.1, 0.1, 0.1], [4, 4, 4], confidence=0.9)
    assert t.between_sd == pytest.approx(0.1)
    assert t.sampling_sd == pytest.approx(0.05)
    assert t.job_sd == pytest.approx(math.sqrt(0.01 - 0.0025))
    # chi2 with 2 dof: the 10% quantile is -2 ln 0.9
    upper = 0.01 * 2 / (-2 * math.log(0.9))
    assert t.job_upper == pytest.approx(math.sqrt(upper - 0.0025))
    with pytest.raises(ValueError, match="at least 3 jobs"):
        job_term([0.0, 0.1], [0.1, 0.1], [4, 4])
    with pytest.raises(ValueError, match="2 rounds"):
        job_term([0.0, 0.1, 0.2], [0.1, 0.1, 0.1], [4, 1, 4])


def test_job_term_upper_bound_covers_the_truth() -> None:
    """Seeded simulation of histories of 10 runs of 5 rounds: the 90% upper bound is above the true job term in
    about 90% of histories, the point estimate in about half."""
    rng = random.Random(3)
    true_job, round_sd, n = 0.05, 0.12, 5
    covered = above = 0
    trials = 400
    for _ in range(trials):
        means, sds = [], []
        for _ in range(10):
            shift = rng.gauss(0.0, true_job)
            xs = [shift + rng.gauss(0.0, round_sd) for _ in range(n)]
            m = sum(xs) / n
            means.append(m)
            sds.append(math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1)))
        t = job_term(means, sds, [n] * 10, confidence=0.9)
        covered += t.job_upper >= true_job
        above += t.job_sd >= true_job
    assert 0.84 <= covered / trials <= 0.96
    assert 0.3 <= above / trials <= 0.6
