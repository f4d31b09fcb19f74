from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfci.stats.summary import median, median_ci, quantile, relative_halfwidth


def test_median_and_quantile_hand_values() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert quantile([1.0, 2.0, 3.0, 4.0, 5.0], 0.25) == 2.0
    assert quantile([1.0, 2.0], 0.5) == 1.5


def test_median_ci_order_statistics() -> None:
    xs = [float(i) for i in range(1, 21)]  # n=20: 95% interval is [x_(6), x_(15)]
    assert median_ci(xs, 0.95) == (6.0, 15.0)
    assert median_ci([1.0, 2.0, 3.0], 0.95) == (1.0, 3.0)  # too few points: min..max


def test_relative_halfwidth() -> None:
    xs = [float(i) for i in range(1, 21)]
    assert relative_halfwidth(xs) == pytest.approx((15.0 - 6.0) / 2 / 10.5)


@given(st.lists(st.floats(min_value=1e-6, max_value=1e3), min_size=1, max_size=50))
def test_median_ci_contains_median(xs: list[float]) -> None:
    lo, hi = median_ci(xs)
    assert lo <= median(xs) <= hi
