"""Trend report: one self-contained HTML page over the history store, for people who follow a suite over time.

First the lead's overview: the biggest movers within the latest `window` runs (store/movers.py: change points
with their commit ranges and sizes) and a matrix of cases by runner class (latest value, status, % of peak). Then,
per runner class ("per hardware") and case: where the metric stands, which runs and commits moved it (change
points, store/trend.py), how much separate runs differ there (the learned cross-job noise,
compare/history_noise.py), what changed in the runner's environment where a change point starts (a driver or
library upgrade can move a metric as much as a commit), and a chart of the series with each run's interval, the
regimes between change points, the commits that started them and the environment changes. The same safety rules
as the run report (html.py): autoescaped templates, chart data as one escaped JSON blob, plotly.js embedded once,
nothing fetched.

Bounded for a fleet: the page carries the series of at most MAX_CHARTS cases (the movers and the cases with
change points first); every case is a table row. Data layout (compact: runs are stored once per runner, cases refer
to them by position):
  {"metric", "max_points", "runners": {name: {"runs": [[run_id, commit, date], ...], "env": [[x, text], ...]}},
   "cases": [{"id", "runner", "unit", "x": [run positions], "y", "lo", "hi",
              "regimes": [[first_x, last_x, geometric mean], ...], "shifts": [[x, ratio, commit], ...]}]}
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from markupsafe import Markup

from perfci.compare.history_noise import NoiseEstimate
from perfci.format.jsonfile import write_text_atomic
from perfci.metrics.registry import FLOPS_PCT_PEAK, metric_direction
from perfci.reports.charts import r4, time_unit
from perfci.reports.html import PAGE_ROWS, asset, environment, plotly_js, script_json
from perfci.reports.trend_counts import (
    ROW_RANK,
    RecentSteps,
    counted_over,
    headline_counts,
    recent_steps,
    row_status,
    trend_call,
)
from perfci.reports.units import format_ratio, format_value
from perfci.store.movers import DEFAULT_WINDOW, Mover, movers
from perfci.store.trend import Fingerprints, Trend, environment_changes

MAX_POINTS = 400  # per case: the latest runs (older ones are summarised by the regimes' means)
MAX_CHARTS = 250  # series carried for charts: every case up to this, else the movers and changed cases first
MAX_MOVERS = 15  # rows per list in the movers overview (regressions, improvements)


def trend_rows(
    items: list[Trend], noise: Mapping[tuple[str, str], NoiseEstimate],
    env: Mapping[tuple[str, str], str] | None = None, recent: RecentSteps | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """One table row per trend, the latest change for the worse first (biggest first), then for the better, then a
    move too recent to call, steady series, and series too short to call. `env`: environment_changes(), shown where
    the last change point starts; `recent`: trend_counts.recent_steps (by default found in `items`)."""
    recent = recent_steps(items) if recent is None else recent
    keyed: list[tuple[tuple[int, float, str, str], dict[str, Any]]] = []
    for t in items:
        status = row_status(t, recent)
        regimes = t.regimes()
        overall = regimes[-1][2] / regimes[0][2] if len(regimes) > 1 else None
        last = t.shifts[-1] if t.shifts else None
        est = noise.get((t.runner, t.case_id))
        job = est.noise if est is not None else None
        severity = abs(math.log(last.ratio)) if last is not None and last.ratio > 0 else 0.0
        rank = ROW_RANK[status]
        unit = t.points[-1].unit if t.points else ""
        row = {
            "runner": t.runner,
            "case": t.case_id,
            "status": status,
            "rank": rank,
            "runs": len(t.points),
            "latest": format_value(t.latest, unit),
            "latest_v": t.latest,
            "last_change": format_ratio(last.ratio) if last else "-",
            "last_change_v": last.ratio if last else None,
            "last_commit": (last.commit or "?")[:10] if last else "-",
            "last_when": last.started_at[:10] if last else "-",
            "last_env": (env or {}).get((t.runner, last.run_id), "") if last else "",
            "overall": format_ratio(overall) if overall else "-",
            "overall_v": overall,
            "shifts": len(t.shifts),
            "noise": f"{job:.1%}" if job is not None else "-",
            "noise_v": job,
        }
        keyed.append(((rank, -severity, t.runner, t.case_id), row))
    keyed.sort(key=lambda kr: kr[0])
    return [row for _, row in keyed]


def charted(items: list[Trend], rows: list[dict[str, Any]], moved: list[Mover]) -> list[Trend]:
    """The trends whose series the page carries: all of them when there are at most MAX_CHARTS, else the movers
    (biggest first), then the other cases with change points in the table's order (worst first). A steady case of
    a big suite is a table row without a chart: that keeps the page bounded at a million points."""
    if len(items) <= MAX_CHARTS:
        return items
    by_key = {(t.runner, t.case_id): t for t in items}
    keys = [(m.runner, m.case_id) for m in moved] + [(r["runner"], r["case"]) for r in rows if r["shifts"]]
    return [by_key[k] for k in dict.fromkeys(keys)][:MAX_CHARTS]


def mover_rows(moved: list[Mover], unit_of: Mapping[tuple[str, str], str]) -> list[dict[str, Any]]:
    """The movers overview's rows (at most MAX_MOVERS)."""
    out = []
    for m in moved[:MAX_MOVERS]:
        unit = unit_of.get((m.runner, m.case_id), "")
        out.append(
            {
                "runner": m.runner, "case": m.case_id, "change": format_ratio(m.shift.ratio),
                "change_v": m.shift.ratio, "from": (m.from_commit or "?")[:10], "to": (m.to_commit or "?")[:10],
                "before": format_value(m.shift.before, unit), "after": format_value(m.shift.after, unit),
                "when": m.shift.started_at[:10], "ago": m.runs_ago,
            }
        )  # fmt: skip
    return out


def matrix_rows(
    items: list[Trend], runners: list[str], peaks: Mapping[tuple[str, str], tuple[float, str]],
    recent: RecentSteps = (),
) -> list[dict[str, Any]]:  # fmt: skip
    """The cross-runner matrix: one row per case, one cell per runner class (latest value, status, % of peak where
    the runner's peaks were known); the row's status is its worst cell's. Rows worst first, then by case."""
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    for t in items:
        unit = t.points[-1].unit if t.points else ""
        peak = peaks.get((t.runner, t.case_id))
        cells.setdefault(t.case_id, {})[t.runner] = {
            "latest": format_value(t.latest, unit),
            "status": row_status(t, recent),
            "pct": f"{peak[0]:.0f}% {'FLOP/s' if peak[1] == FLOPS_PCT_PEAK else 'BW'}" if peak else "",
            "pct_v": peak[0] if peak else None,
        }
    rank = ROW_RANK
    out = []
    for case, by_runner in cells.items():
        worst = min((c["status"] for c in by_runner.values()), key=rank.__getitem__)
        out.append({"case": case, "status": worst, "rank": rank[worst], "cells": [by_runner.get(r) for r in runners]})
    out.sort(key=lambda r: (r["rank"], r["case"]))
    return out


def trend_data(
    items: list[Trend], metric: str, env: Mapping[tuple[str, str], str] | None = None
) -> dict[str, Any]:  # fmt: skip
    runners: dict[str, dict[str, Any]] = {}
    positions: dict[str, dict[str, int]] = {}
    for t in items:
        pos = positions.setdefault(t.runner, {})
        runs = runners.setdefault(t.runner, {"runs": []})["runs"]
        for p in t.points:
            if p.run_id not in pos:
                pos[p.run_id] = len(runs)
                runs.append([p.run_id, (p.commit or "")[:10], p.started_at[:16].replace("T", " ")])
    # runs in time order per runner: positions follow the first time a run is seen, then are re-sorted
    for name, info in runners.items():
        order = sorted(range(len(info["runs"])), key=lambda i: (info["runs"][i][2], i))
        remap = {old: new for new, old in enumerate(order)}
        info["runs"] = [info["runs"][i] for i in order]
        positions[name] = {rid: remap[i] for rid, i in positions[name].items()}
        info["env"] = sorted(
            [positions[name][rid], text]
            for (r, rid), text in (env or {}).items()
            if r == name and rid in positions[name]
        )
    cases = []
    for t in items:
        pts = t.points[-MAX_POINTS:]
        cut = len(t.points) - len(pts)
        unit = pts[-1].unit if pts else ""
        label, scale = time_unit(max((p.value for p in pts), default=1.0)) if unit == "s" else (unit, 1.0)
        pos = positions[t.runner]
        x_of = {i: pos[p.run_id] for i, p in enumerate(t.points)}
        cases.append(
            {
                "id": t.case_id,
                "runner": t.runner,
                "unit": label,
                "x": [x_of[cut + i] for i in range(len(pts))],
                "y": [r4(p.value / scale) for p in pts],
                "lo": [r4(p.low / scale) if p.low is not None else None for p in pts],
                "hi": [r4(p.high / scale) if p.high is not None else None for p in pts],
                "regimes": [[x_of[max(a, cut)], x_of[b], r4(m / scale)] for a, b, m in t.regimes() if b >= cut],
                "shifts": [[x_of[s.index], r4(s.ratio), (s.commit or "?")[:10]] for s in t.shifts if s.index >= cut],
            }
        )
    return {"metric": metric, "max_points": MAX_POINTS, "runners": runners, "cases": cases}


def render_trend(
    items: list[Trend], noise: Mapping[tuple[str, str], NoiseEstimate], metric: str, source: str,
    fingerprints: Fingerprints | None = None, window: int = DEFAULT_WINDOW,
    peaks: Mapping[tuple[str, str], tuple[float, str]] | None = None, recent: RecentSteps | None = None,
    since: str | None = None,
) -> str:  # fmt: skip
    env = environment_changes(fingerprints or {})
    recent = recent_steps(items) if recent is None else recent
    rows = trend_rows(items, noise, env, recent)
    n = headline_counts(trend_call(t, recent) for t in items)  # the same counts as the terminal's and the Markdown's
    by_word = Counter(row["status"] for row in rows)
    counts = {word: by_word[word] for word in sorted(ROW_RANK, key=ROW_RANK.__getitem__)}  # the filters' words
    runners = sorted({t.runner for t in items})
    worse, better = movers(items, window)
    units = {(t.runner, t.case_id): t.points[-1].unit for t in items if t.points}
    charts = charted(items, rows, worse[:MAX_MOVERS] + better[:MAX_MOVERS])
    title = (
        f"{len(rows)} case(s) on {len(runners)} runner(s): {n.worse} worse and {n.better} better "
        f"{counted_over(since)}, {n.steady} steady{n.uncalled_phrase()}"
    )
    js = plotly_js()
    return (
        environment()
        .get_template("trend.html.j2")
        .render(
            title=title,
            metric=metric,
            source=source,
            runners=runners,
            generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            rows=rows,
            counts=[(s, n) for s, n in counts.items() if n],
            window=window,
            worse=mover_rows(worse, units),
            better=mover_rows(better, units),
            n_worse=len(worse),
            n_better=len(better),
            max_movers=MAX_MOVERS,
            matrix=matrix_rows(items, runners, peaks or {}, recent),
            charted=len(charts),
            direction=metric_direction(metric).value,
            max_points=MAX_POINTS,
            page_rows=PAGE_ROWS,
            data=script_json(trend_data(charts, metric, env)),
            plotly=Markup(js) if js else None,
            css=Markup(asset("report.css")),
            table_js=Markup(asset("table.js")),
            script=Markup(asset("trend.js")),
        )
    )


def write_trend_html(
    path: Path, items: list[Trend], noise: Mapping[tuple[str, str], NoiseEstimate], metric: str, source: str,
    fingerprints: Fingerprints | None = None, window: int = DEFAULT_WINDOW,
    peaks: Mapping[tuple[str, str], tuple[float, str]] | None = None, recent: RecentSteps | None = None,
    since: str | None = None,
) -> None:  # fmt: skip
    write_text_atomic(path, render_trend(items, noise, metric, source, fingerprints, window, peaks, recent, since))
