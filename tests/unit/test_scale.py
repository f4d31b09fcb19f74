"""Speed at scale (issue #21): cases indexed once, ids made once, documents decoded without per-field copies,
the HTML table paged, large JSON printed plainly, every input file parsed once."""

from __future__ import annotations

import gc
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import perfci.model
from perfci.api import report as report_api
from perfci.cli import app
from perfci.compare.decide import compare_runs
from perfci.compare.policy import DecisionSettings
from perfci.compare.saved import dump_comparison
from perfci.model import CaseSpec, Metric, Round, format_case_id
from perfci.reports.html import PAGE_ROWS, render_html
from perfci.schema import _METRIC, _ROUND, dump_results, gc_paused, json_safe, load_results, shallow_dict
from tests.conftest import make_case, make_run
from tests.report_fixtures import suite_comparison


def test_cases_are_indexed_once_and_lookups_do_not_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    run = make_run([make_case(f"c{i}", 1e-3) for i in range(50)])
    assert run.case("t.c7[n=8]@cpu") is run.cases[7]
    assert run.case("nope") is None
    calls = []
    real = perfci.model.format_case_id
    monkeypatch.setattr(perfci.model, "format_case_id", lambda *a: calls.append(a) or real(*a))
    fresh = make_run([make_case(f"d{i}", 1e-3) for i in range(50)])
    for _ in range(3):
        for c in fresh.cases:
            assert fresh.case(c.id) is c
    assert len(calls) == 50  # each case's id made once, however often it is looked up


def test_a_repeated_id_finds_the_first_case_as_a_scan_did() -> None:
    first, second = make_case("a", 1e-3), make_case("a", 2e-3)
    run = make_run([first, second])
    assert run.case(first.id) is first
    assert run.case_index == {first.id: first}


def test_a_replaced_spec_gets_its_own_id() -> None:
    spec = CaseSpec("k.m", {"n": 1}, "cpu")
    assert spec.id == "k.m[n=1]@cpu"
    assert replace(spec, device="cuda").id == "k.m[n=1]@cuda" == format_case_id("k.m", {"n": 1}, "cuda")


def test_metric_lookup_finds_the_first_of_a_name() -> None:
    case = make_case("a", 1e-3)
    dup = Metric(case.metrics[0].name, "s", case.metrics[0].direction, -1.0)
    assert replace(case, metrics=(*case.metrics, dup)).metric(dup.name) is case.metrics[0]


def test_builders_make_what_the_constructors_make() -> None:
    r = make_case("a", 1e-3).rounds[0]
    doc = json.loads(json.dumps(json_safe(shallow_dict(r))))
    built = _ROUND(doc, tuple(doc["samples"]))
    assert built == r and isinstance(built, Round)
    assert built.per_call == r.per_call
    minimal = {k: doc[k] for k in ("index", "pid", "iterations", "warmup_s", "stop_reason", "threads")}
    lean = _ROUND(minimal, (1.0,))
    assert lean.telemetry == {} and lean.peak_rss_bytes is None
    assert lean.telemetry is not _ROUND(minimal, (1.0,)).telemetry  # a fresh default each time
    with pytest.raises(TypeError):
        _ROUND({**minimal, "unknown": 1}, (1.0,))  # refused by the class itself, as before
    with pytest.raises(TypeError):
        _METRIC({"name": "x"}, None)


def test_load_round_trips_and_leaves_the_collector_on(tmp_path: Path) -> None:
    run = make_run([make_case("a", 1e-3), make_case("b", 2e-3)])
    dump_results(run, tmp_path / "r.json")
    assert gc.isenabled()
    assert load_results(tmp_path / "r.json") == run
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # left as it was found
    finally:
        gc.enable()


def test_json_safe_in_bulk_matches_one_by_one() -> None:
    assert json_safe((1.0, 2.5)) == [1.0, 2.5]
    assert json_safe([1.0, float("nan"), float("inf")]) == [1.0, None, None]
    assert json_safe([1.0, True, 2]) == [1.0, True, 2]
    assert json_safe([1e308, 1e308]) == [1e308, 1e308]  # their sum overflows: checked one by one


def test_large_html_table_is_paged_and_small_one_is_not() -> None:
    base, cand, comp = suite_comparison(PAGE_ROWS + 50)
    html = render_html(cand, comp, base)
    body = html[html.index('<table id="cases"') :]
    assert f'data-page-rows="{PAGE_ROWS}"' in body
    rows = re.findall(r"<tr data-verdict=\"\w+\"( hidden)?>", body)
    assert len(rows) == len(comp.rows) > PAGE_ROWS  # every row is in the page ...
    assert rows[:PAGE_ROWS] == [""] * PAGE_ROWS and set(rows[PAGE_ROWS:]) == {" hidden"}  # ... after the first hidden
    assert 'id="pager"' in html and "<noscript>" in html
    small_base, small_cand, small = suite_comparison(10)
    small_html = render_html(small_cand, small, small_base)
    small_body = small_html[
        small_html.index('<table id="cases"') : small_html.index("</table>", small_html.index('<table id="cases"'))
    ]
    assert " hidden>" not in small_body and "<noscript>" not in small_html


def test_json_output_is_plain_json(tmp_path: Path) -> None:
    base, cand, _ = suite_comparison(80)
    dump_results(base, tmp_path / "b.json")
    dump_results(cand, tmp_path / "c.json")
    res = CliRunner().invoke(app, ["compare", str(tmp_path / "b.json"), str(tmp_path / "c.json"), "--allow-mismatch",
                                  "--format", "json"])  # fmt: skip
    assert res.exit_code in (1, 3), res.output
    doc = json.loads(res.stdout)
    assert doc["schema"] == "perfci.comparison" and len(doc["rows"]) > 80
    assert "\x1b[" not in res.stdout


def test_report_parses_each_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base, cand = make_run([make_case("a", 1e-3)]), make_run([make_case("a", 1.1e-3, seed=2)])
    dump_results(base, tmp_path / "b.json")
    dump_results(cand, tmp_path / "c.json")
    dump_comparison(compare_runs(base, cand, DecisionSettings()), tmp_path / "cmp.json")
    parsed: list[int] = []
    real = json.loads

    def loads(text: str, **options: Any) -> object:
        if text.startswith('{\n "schema": "perfci.'):  # a document (not a shipped JSON Schema)
            parsed.append(1)
        return real(text, **options)

    monkeypatch.setattr(json, "loads", loads)  # report_api parses through schema.parse_json_text
    inputs = report_api.load_inputs([tmp_path / "cmp.json", tmp_path / "b.json", tmp_path / "c.json"], 0.05)
    assert len(parsed) == 3
    assert inputs.comparison is not None and inputs.baseline == base and inputs.candidate == cand
