"""Fractions as people write them: `3%` or `0.03`, on the command line, in `perfci.toml` and in the pytest plugin's
options alike, and the one range every fraction option (thresholds, job noise) is held to. A bare number above 1
is refused: `5` is far more likely a percentage written without its sign than a threshold of 500%."""

from __future__ import annotations

import math

MAX_FRACTION = 10.0  # 1,000%: far past any threshold or noise level in use
FRACTION_EXAMPLE = "3% or 0.03"  # how every help text and message shows a fraction


def check_fraction(value: float) -> float:
    """`value` when it is a fraction from 0 to MAX_FRACTION; ValueError (one sentence) otherwise. A NaN threshold
    turned a regression into a pass, and -1 or 1e308 ended in a traceback."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= MAX_FRACTION:
        raise ValueError(f"must be a fraction from 0 to {MAX_FRACTION:g} ({FRACTION_EXAMPLE}), not {value!r}")
    return float(value)


def parse_fraction(text: str | float) -> float:
    """`3%` -> 0.03, `0.03` -> 0.03, checked by `check_fraction`; ValueError (one sentence, with the fix) for
    anything else."""
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not a fraction; write {FRACTION_EXAMPLE}.")
    if isinstance(text, str) and text.strip().endswith("%"):
        return check_fraction(parse_percent(text))
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{text!r} is not a fraction; write {FRACTION_EXAMPLE}.") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{text!r} is not a fraction from 0 up; write {FRACTION_EXAMPLE}.")
    if value > 1.0:
        raise ValueError(f"{text!r} is above 1: write {value:g}% for {value:g} percent, or {value / 100:g}.")
    return value


def parse_percent(text: str) -> float:
    """`150%` -> 1.5: a percentage as a fraction, finite and from 0 up but with no upper bound (the caller holds it
    to its own range); ValueError (one sentence, with the fix) for anything else, a number without `%` included."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) if raw.endswith("%") else None
    except ValueError:
        value = None
    if value is None:
        raise ValueError(f"{text!r} is not a fraction; write {FRACTION_EXAMPLE}.")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{text!r} is not a fraction from 0 up; write {FRACTION_EXAMPLE}.")
    return value / 100.0
