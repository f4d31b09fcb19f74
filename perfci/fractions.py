"""Fractions as people write them: `3%` or `0.03`, on the command line, in `perfci.toml` and in the pytest plugin's
options alike. A bare number above 1 is refused: `5` is far more likely a percentage written without its sign than
a threshold of 500%."""

from __future__ import annotations

import math


def parse_fraction(text: str | float) -> float:
    """`3%` -> 0.03, `0.03` -> 0.03; ValueError (one sentence, with the fix) for anything else."""
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not a fraction; write 3% or 0.03.")
    raw = text.strip() if isinstance(text, str) else text
    percent = isinstance(raw, str) and raw.endswith("%")
    try:
        value = float(raw[:-1] if percent else raw)  # type: ignore[index]
    except (TypeError, ValueError):
        raise ValueError(f"{text!r} is not a fraction; write 3% or 0.03.") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{text!r} is not a fraction from 0 up; write 3% or 0.03.")
    if percent:
        return value / 100.0
    if value > 1.0:
        raise ValueError(f"{text!r} is above 1: write {value:g}% for {value:g} percent, or {value / 100:g}.")
    return value
