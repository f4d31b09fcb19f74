"""Human formatting of values with units (shared by every report format)."""

from __future__ import annotations

import math

from perfci.metrics.durations import format_seconds as format_seconds  # here for the reports
from perfci.metrics.registry import default_registry


def format_bytes(b: float | None) -> str:
    if b is None or not math.isfinite(b):
        return "-"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(b) >= scale:  # 1000-1023 of a unit in full: ".3g" wrote 1008 KiB as "1.01e+03 KiB"
            x = b / scale
            return f"{x:.0f} {unit}" if abs(x) >= 100 else f"{x:.3g} {unit}"
    return f"{b:.0f} B"


# memory is counted in pages or allocator blocks: a figure or a difference of a byte or less is the 1-byte stand-in
# for 0 (metrics/rounds.py keeps 0 bytes as 1 so that ratios stay finite)
_ZERO_BYTES = 1.0


def format_value(value: float | None, unit: str) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    if unit == "s":
        return format_seconds(value)
    if unit == "B":  # a memory figure of 0 bytes is kept as 1 (metrics/rounds.py): shown as what it means
        return format_bytes(0.0 if abs(value) <= _ZERO_BYTES else value)
    if unit == "FLOP/s":
        return f"{value / 1e9:.3g} GFLOP/s"
    if not unit:  # a pure number (an accuracy figure)
        return f"{value:.3g}"
    return f"{value:.4g} {unit}"


def format_threshold(metric: str, theta: float, unit: str) -> str:
    """A comparison row's practical threshold: a percentage, or a value in the metric's unit where its definition's
    threshold is absolute (accuracy: "0.005 absolute")."""
    definition = default_registry().get(metric)
    if definition is not None and definition.threshold.absolute:
        return f"{format_value(theta, unit)} absolute"
    return f"{theta * 100:.1f}%"


def relative_threshold(metric: str) -> bool:
    """Whether a metric's practical threshold is a relative change (every timed metric's, memory's)."""
    definition = default_registry().get(metric)
    return definition is None or not definition.threshold.absolute


# past these ratios a change reads better as a multiple: "+41900.0%" says less than "420x"; "-100.0%" hides a
# 3,000-fold drop
_AS_MULTIPLE = (0.1, 10.0)


def format_ratio(r: float | None) -> str:
    """A change as a signed percentage (`+3.4%`), or as a multiple of the baseline (`420x`, `0.00033x`) where it is
    more than tenfold either way."""
    if r is None or not math.isfinite(r):
        return "-"
    if r > 0 and not _AS_MULTIPLE[0] <= r <= _AS_MULTIPLE[1]:
        return f"{r:,.0f}x" if r >= 1000 else f"{r:.3g}x"  # ".3g" wrote 2050 as "2.05e+03x"
    return f"{(r - 1.0) * 100:+.1f}%"


# a byte metric's interval wider than this (as a ratio of the baseline) reads better in bytes: +409500% of a
# 32 KiB peak says less than "+128 MiB"
_BYTES_AS_DELTA = (0.5, 2.0)
# and a byte metric of less than this reads better in bytes whatever its interval: memory comes in pages, so a 4 KiB
# case's interval is "+0.0% .. +100.0%" for one page, or "-4 KiB .. 0 B" one comparison later
_BYTES_AS_DELTA_BELOW = 2**20


def format_change_interval(low: float | None, high: float | None, baseline: float | None = None, unit: str = "") -> str:
    """A comparison row's interval of the change: `+1.2% .. +3.4%`; for a byte metric whose interval is wider than
    halving or doubling its baseline, the same interval as byte differences (`-30 KiB .. +128 MiB`)."""
    if low is None or high is None:
        return "-"
    in_bytes = byte_change_interval(low, high, baseline, unit)
    return in_bytes if in_bytes is not None else f"{format_ratio(low)} .. {format_ratio(high)}"


def byte_change_interval(low: float, high: float, baseline: float | None, unit: str) -> str | None:
    """A byte metric's interval as byte differences (`-30 KiB .. +128 MiB`) where it is wider than halving or
    doubling its baseline; None where a percentage reads better (any other metric, or a narrower interval)."""
    if unit != "B" or not baseline or not math.isfinite(baseline):
        return None
    if _BYTES_AS_DELTA[0] <= low <= high <= _BYTES_AS_DELTA[1] and baseline >= _BYTES_AS_DELTA_BELOW:
        return None
    return f"{_signed_bytes(baseline * (low - 1.0))} .. {_signed_bytes(baseline * (high - 1.0))}"


def _signed_bytes(delta: float) -> str:
    if not math.isfinite(delta):
        return "-"
    if abs(delta) <= _ZERO_BYTES:
        return "0 B"
    return ("+" if delta >= 0 else "-") + format_bytes(abs(delta))


def format_vs_reference(value: float, low: float | None, high: float | None) -> str:
    """`latency.vs_reference` with its interval: multiples of the speed reference's per-call time."""
    interval = f" ({low:.3g} .. {high:.3g})" if low is not None and high is not None else ""
    return f"{value:.3g} x{interval}"
