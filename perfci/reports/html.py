"""Self-contained HTML report: one file, nothing fetched from the network, safe with hostile case names.

jinja2 with autoescaping renders every string from a results file as text. Chart data travels as one JSON
blob in `<script type="application/json">`, with `<`, `>`, `&` (and U+2028/9) written as \\u escapes so no
string can close the script element.

Charts: plotly.js, embedded once per page. We ship plotly.js's official *basic* partial bundle (scatter, bar;
npm `plotly.js-basic-dist-min`, MIT, see `templates/plotly-LICENSE.txt`) rather than the full bundle of the
plotly Python package: 1.2 MB instead of 4.8 MB, and it parses in a quarter of the time (docs/reports.md).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from functools import cache
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import msgspec
from markupsafe import Markup

from perfci.format.jsonfile import write_text_atomic
from perfci.format.model import Comparison, RunResult
from perfci.reports.case_rows import (
    RUNTIME_PARAM,
    ComparisonRow,
    ReportInput,
    RunRow,
    comparison_rows,
    fingerprint_mismatches,
    fingerprint_summary,
    metric_titles,
    run_rows,
    runtime_groups,
    side_fingerprint,
    side_info,
)
from perfci.reports.charts import MAX_SAMPLES, chart_data
from perfci.reports.clocks import clock_lines, kernel_tables, launch_bound_lines
from perfci.reports.decision_lines import html_tables
from perfci.reports.decisions import BY_TIME, DecisionView
from perfci.reports.gpu_modes import boost_notes, burst_sustained_notes
from perfci.reports.verdicts import VERDICT_ORDER, headline, sensitivity, verdict_counts

_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(obj: Any) -> Markup:
    """JSON that is safe inside a <script> element (parse it with JSON.parse(el.textContent))."""
    try:  # msgspec: a tenth of the time of json for the chart data of a large comparison; a NaN becomes null
        text = msgspec.json.encode(obj).decode("utf-8")
    except (TypeError, OverflowError, msgspec.EncodeError):  # an integer beyond 64 bits, a key that is no string
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    for char, code in _JSON_ESCAPES.items():
        text = text.replace(char, code)
    return Markup(text)


@cache
def asset(name: str) -> str:
    return resources.files("perfci.reports").joinpath(f"templates/{name}").read_text("utf-8")


# Rows of the cases table per page (table.js): a table of thousands of rows sorts, filters and lays out only one
# page; the rows after the first come hidden, so the browser does not lay them out while the page loads.
PAGE_ROWS = 200

PLOTLY_BUNDLE = "plotly-basic.min.js"  # plotly.js-basic-dist-min 4.1.1 from npm; update: docs/reports.md


@cache
def plotly_js() -> str | None:
    """The vendored plotly.js bundle, or None when it is missing (the report then renders without charts)."""
    try:
        text = asset(PLOTLY_BUNDLE)
    except FileNotFoundError:
        return None
    return text.replace("</script", "<\\/script")


SHORT_PARAMS = 40  # a parameter list up to this many characters never wraps inside
_NAME_BREAKS = re.compile(r"(?<=\.)|(?<=/)|(?<=::)")


def case_breaks(case_id: str) -> Markup:
    """A case id, escaped, with line-break opportunities (`<wbr>`) before `[` and `@` only; a parameter list of up
    to SHORT_PARAMS characters is kept on one line, a longer one may also wrap after its commas."""
    head, at, device = case_id.rpartition("@")
    if not head:
        head, at, device = case_id, "", ""
    name, bracket, params = head.partition("[")
    # a long name may break after its dots, slashes and `::` (a file path, a pytest node id), not inside a word
    pieces = _NAME_BREAKS.split(name)
    out = "".join(escape(piece) + ("<wbr>" if piece.endswith((".", "/", "::")) else "") for piece in pieces)
    if bracket:
        plist = bracket + params
        if len(plist) <= SHORT_PARAMS:
            out += f'<wbr><span class="nw">{escape(plist)}</span>'
        else:
            out += "<wbr>" + ",<wbr>".join(escape(p) for p in plist.split(","))
    if at:
        out += "<wbr>@" + escape(device)
    return Markup(out)  # escaped piece by piece above (plain strings: a 5,000-row table's ids in 0.1 s, not 0.4)


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("perfci.reports", "templates"),
        autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
        undefined=jinja2.StrictUndefined,
    )
    env.filters["case_breaks"] = case_breaks
    return env


def _verdict_class(text: str) -> str:
    return text.split(":", 1)[0].lower() if text[:4] in ("FAIL", "PASS", "ERRO") else "measured"


def _sensitivity_text(comparison: Comparison | None) -> str:
    """The sensitivity sentence ("This A/B could detect changes of 1.1% or more in 14 of 15 cases"), or ''."""
    sens = sensitivity(comparison) if comparison is not None else None
    if sens is None:
        return ""
    text = sens.sentence()
    return f"{text[0].upper()}{text[1:]} (80% power; the detects column gives each row's minimum detectable change)."


def _context(inp: ReportInput, charts: bool) -> dict[str, Any]:
    run, comparison, base = inp.candidate, inp.comparison, inp.baseline
    verdict = headline(comparison, run)
    saved_base = getattr(comparison, "baseline_run", {}) or {}
    saved_cand = getattr(comparison, "candidate_run", {}) or {}
    fp_cand = side_fingerprint(run, saved_cand)
    fp_base = side_fingerprint(base, saved_base)
    rows: list[ComparisonRow] | list[RunRow]
    with_ref = False  # a run's --speed-reference column
    if comparison is not None:
        rows = comparison_rows(inp)
        counts = [(v.value, n) for v, n in verdict_counts(comparison).items() if n]
        labels = (comparison.baseline_label, comparison.candidate_label)
    else:
        rows = run_rows(run) if run else []
        counts = [(s, sum(1 for r in rows if r.status == s)) for s in ("error", "ok")]
        counts = [(s, n) for s, n in counts if n]
        labels = ("", run.run_id if run else "")
        with_ref = any(r.vs_ref != "-" for r in rows)
    runtimes, groups = runtime_groups(run) if run else ([], [])
    js = plotly_js() if charts else None
    return {
        "verdict": verdict,
        "verdict_class": _verdict_class(verdict),
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "run": run,
        "comparison": comparison,
        "sides": [side_info(labels[0], base, saved_base), side_info(labels[1], run, saved_cand)],
        "mismatches": fingerprint_mismatches(fp_base, fp_cand) if fp_base and fp_cand else [],
        "warnings": list(comparison.warnings) if comparison else [],
        "sensitivity": _sensitivity_text(comparison),
        "gpu_mode_notes": burst_sustained_notes(run) + boost_notes(run),
        "clock_lines": clock_lines(comparison) if comparison is not None else [],
        "launch_bound": launch_bound_lines(run),
        "kernel_tables": kernel_tables(base, run),
        "fingerprint": fingerprint_summary(fp_cand) if fp_cand else [],
        "fingerprint_json": json.dumps(fp_cand, indent=1, sort_keys=True),
        "rows": rows,
        "with_ref": with_ref,
        "metric_titles": metric_titles(run) if comparison is None else [],  # accuracy...: metrics/definitions.py
        "counts": counts,
        "runtime_param": RUNTIME_PARAM,
        "runtimes": runtimes,
        "runtime_groups": groups,
        "decisions": html_tables(inp.decisions.tables(run)),
        "charts": charts,
        "data": script_json(chart_data(inp) if charts else {"cases": []}),
        "plotly": Markup(js) if js else None,
        "css": Markup(asset("report.css")),
        "table_js": Markup(asset("table.js")),
        "script": Markup(asset("report.js")),
        "max_samples": MAX_SAMPLES,
        "page_rows": PAGE_ROWS,
    }


def render_report(inp: ReportInput, charts: bool = True) -> str:
    return environment().get_template("report.html.j2").render(_context(inp, charts))


def render_html(
    run: RunResult | None,
    comparison: Comparison | None,
    baseline: RunResult | None = None,
    decisions: DecisionView = BY_TIME,
) -> str:
    return render_report(ReportInput(run, comparison, baseline, decisions))


def write_html(
    path: Path,
    run: RunResult | None,
    comparison: Comparison | None,
    baseline: RunResult | None = None,
    decisions: DecisionView = BY_TIME,
) -> None:
    write_text_atomic(path, render_html(run, comparison, baseline, decisions))


__all__ = ["VERDICT_ORDER", "ReportInput", "render_html", "render_report", "script_json", "write_html"]
