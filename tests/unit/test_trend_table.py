"""The terminal trend table shows each metric in its own unit, like the run table."""

from __future__ import annotations

from rich.console import Console

from perfci.reports.trend import trend_table
from perfci.store.history import Point
from perfci.store.trend import Trend


def _render(metric: str, value: float) -> str:
    point = Point("run-1", "abc", "2026-11-30T00:00:00Z", value, None, None)
    console = Console(width=200, record=True, no_color=True)
    console.print(trend_table([Trend("cpu-x", "ops.add@cpu", metric, (point,), ())]))
    return console.export_text()


def test_latency_is_shown_with_a_fitting_time_unit() -> None:
    assert "1.25 µs" in _render("latency.median", 1.251e-6)
    assert "4.5 ms" in _render("latency.p90", 4.5e-3)


def test_memory_is_shown_in_binary_units_and_other_metrics_as_numbers() -> None:
    assert "256 MiB" in _render("memory.peak_rss", 256 * 2**20)
    assert "0.29" in _render("energy_per_call", 0.29)
