"""Terminal and JSON renderings of trends (history + change points)."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from perfci.reports.units import format_bytes, format_ratio, format_seconds
from perfci.store.trend import Trend


def _value(v: float | None, metric: str) -> str:
    """perfci's metric names fix their units: latency.* in seconds, memory.* in bytes."""
    if metric.startswith("latency"):
        return format_seconds(v)
    if metric.startswith("memory"):
        return format_bytes(v)
    return "-" if v is None else f"{v:.4g}"


def trend_table(items: list[Trend]) -> Table:
    table = Table(title="perfci trend", title_justify="left")
    table.add_column("runner")
    table.add_column("case", overflow="fold")
    table.add_column("metric")
    table.add_column("runs", justify="right")
    table.add_column("latest")
    table.add_column("change points (run, commit: change)")
    for t in items:
        shifts = "; ".join(f"{s.run_id} {(s.commit or '?')[:10]}: {format_ratio(s.ratio)}" for s in t.shifts) or "none"
        table.add_row(t.runner, Text(t.case_id), t.metric, str(len(t.points)), _value(t.latest, t.metric), Text(shifts))
    return table


def trends_json(items: list[Trend]) -> list[dict[str, Any]]:
    return [
        {
            "runner": t.runner,
            "case_id": t.case_id,
            "metric": t.metric,
            "points": [p.__dict__ for p in t.points],
            "change_points": [s.__dict__ for s in t.shifts],
        }
        for t in items
    ]
