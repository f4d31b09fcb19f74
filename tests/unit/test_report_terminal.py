"""Terminal tables: the same verdicts, most urgent first, and a bounded table for big suites."""

from __future__ import annotations

from rich.console import Console

from perfci.reports.terminal import comparison_table, verdict_line
from tests.report_fixtures import suite_comparison


def _text(table: object) -> str:
    console = Console(width=220, record=True, no_color=True)
    console.print(table)
    return console.export_text()


def test_comparison_table_urgent_first_and_limited() -> None:
    _, cand, comp = suite_comparison(60)
    text = _text(comparison_table(comp, limit=5))
    lines = [line for line in text.splitlines() if "@cpu" in line]
    assert len(lines) == 5
    assert "regression" in lines[0] and "error" in lines[2]
    assert f"... and {len(comp.rows) - 5:,} more rows (see report.html)" in text
    assert len([line for line in _text(comparison_table(comp)).splitlines() if "@cpu" in line]) == len(comp.rows)
    assert verdict_line(comp, cand).startswith("FAIL: 2 regressions, 2 errors, 2 inconclusive")
