"""Terminal and JSON renderings of the cross-job noise learned from history (compare/history_noise.py)."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from perfci.compare.history_noise import NoiseEstimate
from perfci.compare.policy import DecisionSettings, job_noise


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def noise_table(items: list[NoiseEstimate], min_runs: int) -> Table:
    table = Table(title="perfci history noise (sd, log scale)", title_justify="left")
    table.add_column("runner")
    table.add_column("case", overflow="fold")
    table.add_column("metric")
    table.add_column("runs used / stored", justify="right")
    table.add_column("between runs", justify="right")
    table.add_column("rounds explain", justify="right")
    table.add_column("job term", justify="right")
    table.add_column("used by compare", justify="right")
    for e in items:
        t = e.term
        used = (
            f"{t.job_upper:.1%} (upper {t.confidence:.0%})"
            if t is not None
            else f"default {job_noise(DecisionSettings(), e.case_id, e.metric):.0%} (< {min_runs} runs)"
        )
        table.add_row(
            e.runner,
            Text(e.case_id),
            e.metric,
            f"{e.used} / {e.runs}",
            _pct(t.between_sd if t else None),
            _pct(t.sampling_sd if t else None),
            _pct(t.job_sd if t else None),
            used,
        )
    return table


def noise_json(items: list[NoiseEstimate]) -> list[dict[str, Any]]:
    return [
        {
            "runner": e.runner,
            "case_id": e.case_id,
            "metric": e.metric,
            "runs": e.runs,
            "used": e.used,
            "since_run": e.since,
            "between_sd": e.term.between_sd if e.term else None,
            "sampling_sd": e.term.sampling_sd if e.term else None,
            "job_sd": e.term.job_sd if e.term else None,
            "job_upper": e.term.job_upper if e.term else None,
            "confidence": e.term.confidence if e.term else None,
        }
        for e in items
    ]
