"""Terminal and JSON renderings of the cross-job noise learned from history (compare/history_noise.py)."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from rich.table import Table
from rich.text import Text

from perfci.compare.history_noise import NoiseEstimate
from perfci.compare.policy import DecisionSettings, job_noise
from perfci.stats.components import JobTerm


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
    """One object per case; the job-term fields (stats/components.py JobTerm) are null without an estimate."""
    blank = dict.fromkeys(f.name for f in fields(JobTerm))
    return [
        {
            "runner": e.runner,
            "case_id": e.case_id,
            "metric": e.metric,
            "runs": e.runs,
            "used": e.used,
            "since_run": e.since,
            **(asdict(e.term) if e.term else blank),
        }
        for e in items
    ]
