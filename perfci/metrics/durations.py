"""A duration in words for people (`1.5 ms`, `230 ns`): one formatter for every report and message."""

from __future__ import annotations

import math


def format_seconds(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"
