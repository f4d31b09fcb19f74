"""The terminal trend table shows each metric in the unit stored with it, like the run table."""

from __future__ import annotations

from rich.console import Console

from perfci.reports.trend_text import trend_table
from perfci.store.history import Point
from perfci.store.trend import Shift, Trend


def _render(metric: str, value: float, unit: str) -> str:
    point = Point("run-1", "abc", "2026-11-30T00:00:00Z", value, None, None, unit)
    console = Console(width=200, record=True, no_color=True)
    console.print(trend_table([Trend("cpu-x", "ops.add@cpu", metric, (point,), ())]))
    return console.export_text()


def test_latency_is_shown_with_a_fitting_time_unit() -> None:
    assert "1.25 µs" in _render("latency.median", 1.251e-6, "s")
    assert "4.5 ms" in _render("latency.p90", 4.5e-3, "s")


def test_memory_is_shown_in_binary_units_and_other_metrics_with_their_unit() -> None:
    assert "256 MiB" in _render("memory.peak_rss", 256 * 2**20, "B")
    assert "0.29 J" in _render("energy_per_call", 0.29, "J")


def test_the_speed_reference_ratio_is_not_shown_as_seconds() -> None:
    """`latency.vs_reference` shares the latency prefix but is a ratio (was shown as "2.76 s")."""
    text = _render("latency.vs_reference", 2.755, "x ref")
    assert "2.755 x ref" in text and " s " not in text.replace("x ref", "")


def test_the_trend_table_keeps_ids_and_statuses_whole_at_80_columns() -> None:
    case_id = "tests/bench/test_bench_style.py::test_sort_numbers_large@cpu"
    points = tuple(
        Point(f"run-{i}", f"c0ffee{i}", f"2026-11-{10 + i}T00:00:00Z", 1e-3, None, None, "s") for i in range(8)
    )
    moved = Shift("run-4", "c0ffee4", "2026-11-14T00:00:00Z", 1e-3, 1.2e-3, 1.2, 0.001, 4)
    items = [
        Trend("cpu-x", case_id, "latency.median", points, (moved,)),
        Trend("cpu-y", case_id, "latency.median", points, ()),
    ]
    for width in (60, 80):
        console = Console(width=width, record=True, no_color=True, force_terminal=True)
        console.print(trend_table(items))
        text = console.export_text()
        lines = text.splitlines()
        assert "…" not in text and case_id in lines and all(len(line.rstrip()) <= width for line in lines)
        statuses = [line.split()[-1] for line in lines if line.startswith("  cpu-")]
        assert statuses == ["worse", "steady"]
        assert "run-4 c0ffee4: +20.0%" in " ".join(text.split())
    wide = Console(width=300, record=True, no_color=True)
    wide.print(trend_table(items))
    assert any(case_id in line and "worse" in line and "run-4" in line for line in wide.export_text().splitlines())
