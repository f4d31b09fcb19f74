"""Human formatting of values with units (shared by every report format)."""

from __future__ import annotations

import math

from perfci.metrics.registry import default_registry


def format_seconds(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def format_bytes(b: float | None) -> str:
    if b is None or not math.isfinite(b):
        return "-"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(b) >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b:.0f} B"


def format_value(value: float | None, unit: str) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    if unit == "s":
        return format_seconds(value)
    if unit == "B":
        return format_bytes(value)
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


def format_ratio(r: float | None) -> str:
    if r is None or not math.isfinite(r):
        return "-"
    return f"{(r - 1.0) * 100:+.1f}%"


def format_vs_reference(value: float, low: float | None, high: float | None) -> str:
    """`latency.vs_reference` with its interval: multiples of the speed reference's per-call time."""
    interval = f" ({low:.3g} .. {high:.3g})" if low is not None and high is not None else ""
    return f"{value:.3g} x{interval}"
