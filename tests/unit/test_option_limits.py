"""Budgets and counts of `run` and `ab` are checked before anything runs, against the bounds of the options table
(fuzzing: `--budget nan` was taken and never stopped a look; `--pairs 1000000000` ran past the time budget, which
is read only between looks)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from perfci.api.ab import ABRequest, ab_settings
from perfci.api.settings import Settings
from perfci.config import Config
from perfci.errors import UsageError
from perfci.options import ROUND_TIME


@pytest.mark.parametrize("round_time", [math.nan, math.inf, 0.0, -1.0, 3600.5, 1e9])
def test_a_round_time_outside_its_range_is_refused(round_time: float) -> None:
    with pytest.raises(UsageError, match=r"--round-time: must be a number > 0 and at most 3600 \(seconds\)"):
        Settings({}).round_time_s(round_time)
    assert Settings({}).round_time_s(None) == ROUND_TIME.default and Settings({}).round_time_s(0.05) == 0.05
    assert Settings({}).round_time_s(3600.0) == 3600.0


def test_the_same_bounds_hold_for_a_configured_value_and_name_the_file(tmp_path: Path) -> None:
    """A Config made in Python (not read from a file) passes the same checks as a flag."""
    cfg = Config(source=tmp_path / "perfci.toml", rounds=1, round_time_s=7200.0)
    with pytest.raises(UsageError, match=r"perfci.toml: key rounds: must be an integer >= 2, not 1\."):
        Settings({}, cfg).rounds(None)
    with pytest.raises(UsageError, match=r"perfci.toml: key round_time_s: must be a number > 0 and at most 3600"):
        Settings({}, cfg).round_time_s(None)
    assert Settings({}, cfg).rounds(3) == 3  # the flag wins, and is checked alone


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"budget_s": math.nan}, "--budget: must be a number > 0 and at most 604800"),
        ({"budget_s": -1.0}, "--budget: must be a number > 0"),
        ({"budget_s": math.inf}, "--budget: must be a number > 0"),
        ({"budget_s": 8 * 86_400.0}, "--budget: must be a number > 0 and at most 604800"),
        ({"pairs": 1_000_000_000}, "--pairs: must be an integer >= 2 and at most 10000, not 1000000000"),
        ({"pairs": 1}, "--pairs: must be an integer >= 2"),
        ({"extra": 20_000}, "--extra: must be an integer >= 1 and at most 10000, not 20000"),
        ({"looks": 1_000}, "--looks: must be an integer >= 1 and at most 100, not 1000"),
        ({"sample_budget_s": math.nan}, "--round-time: must be a number > 0"),
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
