"""HTML report: escaping, safe JSON, content, chart data (rendered in memory; the browser test opens it)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from perfci.format.model import Comparison, MetricComparison, Verdict
from perfci.reports.case_rows import ReportInput, fingerprint_mismatches, runtime_groups
from perfci.reports.charts import MAX_SAMPLES, bounded, chart_data, r4, time_unit
from perfci.reports.html import render_html, render_report, script_json
from perfci.reports.verdicts import VERDICT_ORDER, headline, sort_rows
from tests.conftest import make_case, make_run
from tests.report_fixtures import HOSTILE, suite_comparison

ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


@pytest.fixture(scope="module")
def small() -> tuple[str, Comparison]:
    base, cand, comp = suite_comparison(12, telemetry=True)
    return render_html(cand, comp, base), comp


def _blob(html: str) -> dict:  # type: ignore[type-arg]
    m = re.search(r'<script type="application/json" id="perfci-data">(.*?)</script>', html, re.S)
    assert m
    return json.loads(m.group(1))  # type: ignore[no-any-return]


def test_hostile_case_name_is_text_never_markup(small: tuple[str, Comparison]) -> None:
    html, _ = small
    assert HOSTILE not in html
    assert ESCAPED in html
    assert f"suite.hostile[name={HOSTILE}]@cpu" in _blob(html)["cases"]


def test_script_json_cannot_close_the_script_element() -> None:
    value = {"a": "</script><script>alert(1)</script>", "b": "x & y > z", "c": "\u2028"}
    text = str(script_json(value))
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == value


def test_nothing_is_fetched_from_the_network(small: tuple[str, Comparison]) -> None:
    html, _ = small
    assert not re.search(r"<(script|link|img|iframe|object|embed)\b[^>]*\b(src|href|data)=", html, re.I)
    assert "default-src 'none'" in html  # the CSP forbids fetching anything


def test_top_of_page_has_verdict_revisions_fingerprint_and_mismatch(small: tuple[str, Comparison]) -> None:
    html, comp = small
    assert f'<h1 id="verdict" class="fail">{headline(comp, None)}</h1>' in html
    assert "main@abc123" in html and "pr-42@def456" in html
    assert "test cpu" in html
    assert 'id="mismatch"' in html and "cpu_logical_cores" in html


def test_every_case_appears_most_urgent_first(small: tuple[str, Comparison]) -> None:
    html, comp = small
    body = html[html.index('<table id="cases"') :]
    verdicts = re.findall(r'<tr data-verdict="(\w+)">', body)
    assert len(verdicts) == len(comp.rows)
    assert verdicts == sorted(verdicts, key=lambda v: VERDICT_ORDER.index(Verdict(v)))
    text = re.sub(r'<wbr>|<span class="nw">|</span>', "", body)  # the case column's break opportunities
    for r in comp.rows:
        assert r.case_id.replace("<", "&lt;").replace(">", "&gt;") in text


def test_sort_rows_largest_change_first_within_a_verdict() -> None:
    rows = [
        MetricComparison("a", "m", Verdict.UNCHANGED, ratio=1.01),
        MetricComparison("b", "m", Verdict.REGRESSION, ratio=1.2),
        MetricComparison("c", "m", Verdict.REGRESSION, ratio=1.5),
        MetricComparison("d", "m", Verdict.INCONCLUSIVE, ratio=1.3),
    ]
    assert [r.case_id for r in sort_rows(rows)] == ["c", "b", "d", "a"]


def test_headline_pass_fail_error() -> None:
    row = MetricComparison("a", "m", Verdict.UNCHANGED)
    assert headline(Comparison("b", "c", (row,))) == "PASS: 1 unchanged"
    err = replace(row, verdict=Verdict.ERROR)
    assert headline(Comparison("b", "c", (row, err))).startswith("ERROR: 1 error")
    reg = replace(row, verdict=Verdict.REGRESSION)
    assert headline(Comparison("b", "c", (reg, reg, row))) == "FAIL: 2 regressions, 1 unchanged (3 rows of 1 case)"
    cases = (replace(reg, case_id="x"), replace(reg, case_id="y"), row)
    assert headline(Comparison("b", "c", cases)) == "FAIL: 2 regressions, 1 unchanged"  # a row a case: no count


def test_chart_data_is_compact_and_complete(small: tuple[str, Comparison]) -> None:
    html, comp = small
    data = _blob(html)
    assert len(data["dist"]) == 12
    for d in data["dist"]:
        for side in (d["b"], d["n"]):
            if side:
                assert len(side["s"]) <= MAX_SAMPLES and len(side["r"]) == 5
    assert len(data["ratio"]["rows"]) == sum(1 for r in comp.rows if r.ratio is not None and r.verdict.value != "error")
    assert data["roof"]["roofs"] == [{"device": "cpu", "bw": 4.0e12, "flops": 6.0e14}]
    tel = data["telemetry"]
    assert set(tel["series"]) == {"sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c"}
    assert tel["throttle"] and all(t[2] == "sw_power_cap" for t in tel["throttle"])  # gpu_idle is benign
    assert data["memory"]


def test_no_telemetry_and_no_peaks_degrade_gracefully() -> None:
    base, cand, comp = suite_comparison(6)
    data = chart_data(ReportInput(cand, comp, base))
    assert data["telemetry"] is None
    assert data["roof"]["roofs"] == []
    html = render_report(ReportInput(cand, comp, base), charts=False)
    assert "plotly" not in html.lower().split("<main>")[0]


def test_run_only_report_lists_errors_first() -> None:
    _, cand, _ = suite_comparison(6)
    html = render_html(cand, None)
    assert "no baseline to compare with" in html
    statuses = re.findall(r'<tr data-verdict="(\w+)">', html[html.index('<table id="cases"') :])
    assert statuses[0] == "error" and set(statuses[1:]) == {"ok"}


def test_runtimes_side_by_side() -> None:
    _, cand, _ = suite_comparison(12)
    runtimes, groups = runtime_groups(cand)
    assert runtimes == ["compile", "ort", "eager"] or set(runtimes) == {"eager", "compile", "ort"}
    full = [g for g in groups if len(g["cells"]) == 3]
    assert full and all(sum(c["best"] for c in g["cells"].values()) >= 1 for g in full)
    assert "Runtimes side by side" in render_html(cand, None)


def test_fingerprint_mismatch_ignores_machine_identity() -> None:
    a = {"cpu_model": "x", "gpus": [{"name": "H100", "uuid": "GPU-1"}], "peaks": {"cpu": {"flops": 1}}}
    b = {"cpu_model": "y", "gpus": [{"name": "H100", "uuid": "GPU-2"}], "peaks": {"cpu": {"flops": 2}}}
    assert fingerprint_mismatches(a, b) == [("cpu_model", '"x"', '"y"')]


def test_helpers() -> None:
    assert bounded(list(range(100)), 5) == [0, 25, 50, 74, 99]
    assert bounded([3, 1, 2], 5) == [1, 2, 3]
    assert r4(1.234567e-3) == 0.001235 and r4(float("nan")) is None
    assert time_unit(2e-3) == ("ms", 1e-3) and time_unit(5e-10)[0] == "ns"


def test_default_suite_sized_run_is_small() -> None:
    run = make_run([make_case(n, 1e-3) for n in ("matmul", "softmax", "mlp", "layernorm")])
    assert len(render_html(run, None).encode()) < 2_000_000


def test_throttled_samples_and_incomplete_runs_are_noted() -> None:
    case = make_case("hot", 1e-3)
    rounds = tuple(replace(r, telemetry={"throttle_flagged": 3, "throttle_dropped": 1}) for r in case.rounds)
    run = make_run([replace(case, rounds=rounds)])
    run = replace(run, settings={**run.settings, "complete": False})
    html = render_html(run, None)
    assert "15 samples throttled (5 dropped)" in html
    assert "This run did not finish" in html


def test_run_only_report_shows_the_speed_reference_column_only_when_measured() -> None:
    from perfci.metrics import case_metrics

    case = make_case("k", 1e-3)
    rounds = tuple(replace(r, telemetry={"reference_per_call_s": [r.per_call[0] / 4] * 5}) for r in case.rounds)
    with_ref = replace(case, rounds=rounds, metrics=case_metrics(rounds, None, None))
    html = render_html(make_run([with_ref]), None)
    assert "vs reference</th>" in html
    ratio = with_ref.metric("latency.vs_reference")
    assert ratio is not None and f">{ratio.value:.3g} x (" in html
    assert "vs reference</th>" not in render_html(make_run([case]), None)


def test_case_ids_break_only_at_separators_never_inside_a_word() -> None:
    from perfci.reports.html import case_breaks

    short = str(case_breaks("default.matmul[n=384,dtype=float32]@cpu"))
    assert short == 'default.<wbr>matmul<wbr><span class="nw">[n=384,dtype=float32]</span><wbr>@cpu'
    long_params = ",".join(f"p{i}=value{i}" for i in range(6))
    assert (
        str(case_breaks(f"m.x[{long_params}]@cuda:0"))
        == "m.<wbr>x<wbr>[" + ",<wbr>".join(f"p{i}=value{i}" for i in range(6)) + "]<wbr>@cuda:0"
    )
    node = str(case_breaks("tests/bench/test_x.py::test_sum[10]@cpu"))  # a pytest node id: after / . and ::
    assert node.startswith("tests/<wbr>bench/<wbr>test_x.<wbr>py::<wbr>test_sum<wbr>")
    assert str(case_breaks("plain")) == "plain"
    hostile = str(case_breaks(f"a{HOSTILE}[x=<b>]@cpu"))
    assert "<script>" not in hostile and "<b>" not in hostile and "&lt;script&gt;" in hostile
    html = render_html(make_run([make_case("k", 1e-3)]), None)
    assert '<td class="case">t.<wbr>k<wbr><span class="nw">[n=8]</span><wbr>@cpu</td>' in html
