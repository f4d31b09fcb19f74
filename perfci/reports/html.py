"""Self-contained HTML report (jinja2, autoescaped: case names come from pull requests)."""

from __future__ import annotations

from pathlib import Path

import jinja2

from perfci.model import CaseStatus, Comparison, RunResult
from perfci.reports.terminal import verdict_line
from perfci.reports.units import format_ratio, format_seconds, format_value


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("perfci.reports", "templates"),
        autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(seconds=format_seconds, value=format_value, ratio=format_ratio)
    return env


def render_html(run: RunResult | None, comparison: Comparison | None) -> str:
    template = _environment().get_template("report.html.j2")
    return template.render(
        run=run,
        comparison=comparison,
        verdict=verdict_line(comparison, run),
        error_status=CaseStatus.ERROR,
    )


def write_html(path: Path, run: RunResult | None, comparison: Comparison | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(run, comparison), "utf-8")
