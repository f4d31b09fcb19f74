"""Terminal and JSON renderings of trends (history + change points)."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from perfci.reports.units import format_ratio, format_value
from perfci.store.trend import Trend


def _value(t: Trend) -> str:
    """The latest value in the unit stored with it (latency.vs_reference is a ratio, not seconds)."""
    if not t.points:
        return "-"
    return format_value(t.points[-1].value, t.points[-1].unit)


def trend_table(items: list[Trend]) -> Table:
    table = Table(title="perfci trend", title_justify="left")
    table.add_column("runner")
    table.add_column("case", overflow="fold")
    table.add_column("metric")
    table.add_column("status")
    table.add_column("runs", justify="right")
    table.add_column("latest")
    table.add_column("change points (run, commit: change)")
    for t in items:
        shifts = "; ".join(f"{s.run_id} {(s.commit or '?')[:10]}: {format_ratio(s.ratio)}" for s in t.shifts) or "none"
        status = t.status()
        style = {"slower": "bold red", "faster": "green"}.get(status, "")
        table.add_row(
            t.runner, Text(t.case_id), t.metric, Text(status, style=style), str(len(t.points)), _value(t), Text(shifts)
        )
    return table


def trends_json(items: list[Trend]) -> list[dict[str, Any]]:
    return [
        {
            "runner": t.runner,
            "case_id": t.case_id,
            "metric": t.metric,
            "points": [p.__dict__ for p in t.points],
            "status": t.status(),
            "change_points": [s.__dict__ for s in t.shifts],
        }
        for t in items
    ]
