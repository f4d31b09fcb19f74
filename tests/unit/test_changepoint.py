from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfci.stats.changepoint import detect_change_points


def noisy(level: float, n: int, rng: random.Random, cv: float = 0.01) -> list[float]:
    return [level * math.exp(rng.gauss(0.0, cv)) for _ in range(n)]


def test_single_step_is_found_at_the_right_run() -> None:
    rng = random.Random(1)
    series = noisy(1.0, 15, rng) + noisy(1.10, 15, rng)
    points = detect_change_points(series)
    assert [p.index for p in points] == [15]
    assert points[0].ratio == pytest.approx(1.10, rel=0.02)
    assert points[0].p_value < 0.01


def test_two_steps() -> None:
    rng = random.Random(2)
    series = noisy(1.0, 12, rng) + noisy(1.2, 12, rng) + noisy(0.9, 12, rng)
    assert [p.index for p in detect_change_points(series)] == [12, 24]


def test_small_shift_below_min_effect_is_not_reported() -> None:
    rng = random.Random(3)
    series = noisy(1.0, 20, rng, cv=0.001) + noisy(1.01, 20, rng, cv=0.001)
    assert detect_change_points(series, min_effect=0.03) == []
    assert [p.index for p in detect_change_points(series, min_effect=0.005)] == [20]


def test_hand_computed_two_level_series() -> None:
    # logs: three at 0, three at log 2: exact step, zero variance on each side -> infinite t, p = 0
    points = detect_change_points([1.0, 1.0, 1.0, 2.0, 2.0, 2.0])
    assert len(points) == 1
    p = points[0]
    assert (p.index, p.before, p.after, p.ratio, p.p_value) == (3, 1.0, 2.0, 2.0, 0.0)


def test_too_short_series_has_none() -> None:
    assert detect_change_points([1.0, 2.0, 3.0, 4.0, 5.0]) == []


def test_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        detect_change_points([1.0, 0.0, 1.0, 1.0, 1.0, 1.0])


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=10_000))
def test_stationary_noise_rarely_has_change_points(seed: int) -> None:
    rng = random.Random(seed)
    series = noisy(1.0, 30, rng, cv=0.05)
    # Bonferroni at alpha=1% and a 3% effect: false positives on pure noise should be very rare
    assert len(detect_change_points(series)) <= 1


def test_false_positive_rate_on_noise_is_below_alpha() -> None:
    hits = sum(bool(detect_change_points(noisy(1.0, 30, random.Random(s), cv=0.05))) for s in range(300))
    assert hits / 300 <= 0.02
