"""Budgets and counts of `run` and `ab` are checked before anything runs (fuzzing: `--budget nan` was taken and
never stopped a look; `--pairs 1000000000` ran past the time budget, which is read only between looks)."""

from __future__ import annotations

import math

import pytest

from perfci.api.ab import ABRequest, ab_settings
from perfci.api.settings import Settings
from perfci.errors import UsageError


@pytest.mark.parametrize("budget", [math.nan, math.inf, 0.0, -1.0, 1e9])
def test_a_sampling_budget_outside_its_range_is_refused(budget: float) -> None:
    with pytest.raises(UsageError, match="the sampling budget must be above 0 and at most 3600 s"):
        Settings({}).budget_s(budget, 0.4)
    assert Settings({}).budget_s(None, 0.4) == 0.4 and Settings({}).budget_s(0.05, 0.4) == 0.05


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"budget_s": math.nan}, "--budget must be above 0"),
        ({"budget_s": -1.0}, "--budget must be above 0"),
        ({"budget_s": math.inf}, "--budget must be above 0"),
        ({"pairs": 1_000_000_000}, "--pairs 1000000000 is more than 10,000"),
        ({"extra": 20_000}, "--extra 20000 is more than 10,000"),
        ({"looks": 1_000}, "--looks 1000 is more than 100"),
        ({"sample_budget_s": math.nan}, "the sampling budget must be above 0"),
    ],
)
def test_ab_options_outside_their_range_are_refused(change: dict[str, float], words: str) -> None:
    with pytest.raises(UsageError, match=words):
        ab_settings(Settings({}), ABRequest(base_rev="HEAD", **change))  # type: ignore[arg-type]
    assert ab_settings(Settings({}), ABRequest(base_rev="HEAD", pairs=8, budget_s=60.0)).budget_s == 60.0


def test_a_huge_error_message_is_cut_to_its_first_4000_characters() -> None:
    from perfci.engine.worker import _error_event

    try:
        raise ValueError("x" * 20_000_000)
    except ValueError as exc:
        event = _error_event("w.case@cpu", exc)
    assert event.kind == "raised" and len(event.message) < 4_200
    assert "... (19,996,000 more characters) (at test_option_limits.py:" in event.message
