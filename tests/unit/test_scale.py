"""Speed at scale (issue #21): cases indexed once, ids made once, documents decoded without per-field copies,
the HTML table paged, large JSON printed plainly, every input file parsed once."""

from __future__ import annotations

import gc
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
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
from perfci.schema import (
    _METRIC,
    _ROUND,
    dump_results,
    gc_paused,
    json_safe,
    load_results,
    parse_results,
    run_to_dict,
    shallow_dict,
)
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


def test_owned_builders_take_the_dict_over_and_others_copy_it() -> None:
    r = make_case("a", 1e-3).rounds[0]
    doc = json.loads(json.dumps(json_safe(shallow_dict(r))))
    minimal = {k: doc[k] for k in ("index", "pid", "iterations", "warmup_s", "stop_reason", "threads", "samples")}
    kept = dict(minimal)
    copied = _ROUND(minimal, tuple(minimal["samples"]))
    assert minimal == kept and copied.__dict__ is not minimal  # not owned: the caller's dict is left as it was
    owned = _ROUND(minimal, tuple(minimal["samples"]), True)
    assert owned.__dict__ is minimal and owned == copied  # owned: the dict itself, completed with the defaults
    assert owned.telemetry == {} and owned.peak_rss_bytes is None and owned.samples == tuple(kept["samples"])


def test_parse_leaves_the_document_alone_unless_handed_over() -> None:
    doc = json.loads(json.dumps(run_to_dict(make_run([make_case("a", 1e-3)]))))
    before = json.dumps(doc)
    first = parse_results(doc, "x.json")
    assert json.dumps(doc) == before  # the caller's document is unchanged
    second = parse_results(doc, "x.json", own=True)
    assert second == first and second.cases[0].rounds[0].__dict__ is doc["cases"][0]["rounds"][0]


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
    real, real_fast = json.loads, orjson.loads

    def loads(text: str, **options: Any) -> object:
        if text.lstrip("{\n ").startswith('"schema": "perfci.'):  # a document (not a shipped JSON Schema)
            parsed.append(1)
        return real(text, **options)

    def fast_loads(data: bytes) -> object:
        if data.lstrip(b"{\n ").startswith(b'"schema": "perfci.'):
            parsed.append(1)
        return real_fast(data)

    real_reader = report_api.fast_results
    read_fast: list[str] = []

    def reader(data: bytes, source: str) -> Any:
        run = real_reader(data, source)
        if run is not None:
            read_fast.append(source)
        return run

    # report_api reads a results file by the fast reader (msgspec), anything else through schema.parse_json_bytes:
    # orjson, or json for what orjson cannot read as json does
    monkeypatch.setattr(json, "loads", loads)
    monkeypatch.setattr(orjson, "loads", fast_loads)
    monkeypatch.setattr(report_api, "fast_results", reader)
    inputs = report_api.load_inputs([tmp_path / "cmp.json", tmp_path / "b.json", tmp_path / "c.json"], 0.05)
    assert len(parsed) == 1  # the comparison file
    assert read_fast == [str(tmp_path / "b.json"), str(tmp_path / "c.json")]  # the results files, once each
    assert inputs.comparison is not None and inputs.baseline == base and inputs.candidate == cand


BAD_FILES = [
    b"",
    b"   ",
    b'{"schema": "perfci.results", "x": NaN}',
    b'{"a": [1, Infinity]}',
    b'{"a": 1e400}',
    b'{"a": -1e999}',
    b'{"a": ' + b"1" * 400 + b"}",
    b'{"a": "\\ud800"}',
    b'{"a": "\\udc00 x"}',
    b'{"a": 1,}',
    b'{"a": 01}',
    b"\xef\xbb\xbf{}",
    b'{"a": "\xff"}',
    b'{"a": "\xed\xa0\x80"}',
    b'{"a": 1}\r\n\r\nx',
    b"[" * 2000 + b"]" * 2000,
    b'{"a": "tab\tinside"}',
]


@pytest.mark.parametrize("data", BAD_FILES)
def test_a_bad_file_is_refused_as_by_the_json_path(tmp_path: Path, data: bytes) -> None:
    """orjson's refusals go back to the json path, so a bad file gets the same words as before (issue #21)."""
    from perfci.errors import ResultsFormatError
    from perfci.schema import parse_json_text, read_json_document

    path = tmp_path / "r.json"
    path.write_bytes(data)
    with pytest.raises(ResultsFormatError) as fast:
        read_json_document(path, "results")
    try:
        text = path.read_text("utf-8")
    except UnicodeDecodeError as exc:
        assert fast.value.message == f"{path}: cannot read results file ({exc})."
        return
    with pytest.raises(ResultsFormatError) as slow:
        parse_json_text(text, str(path), "results")
    assert fast.value.message == slow.value.message


GOOD_FILES = [
    b'{"a": 12345678901234567890, "b": [-1234567890123456789, 1.5]}',  # beyond 64 bits: orjson says float
    b'{"a": 123456789012345678, "b": "1234567890123456789012", "c": 0.000123456789012345678901}',
    b'{"a": 1e-400, "b": -0.0, "c": 1E5, "d": "\\ud83d\\ude00", "e": {"k": 1, "k": 2}}',
    b"1234567890123456789012",
]


@pytest.mark.parametrize("data", GOOD_FILES)
def test_a_good_file_reads_as_by_the_json_path(tmp_path: Path, data: bytes) -> None:
    from perfci.schema import read_json_document

    path = tmp_path / "r.json"
    path.write_bytes(data)
    fast, slow = read_json_document(path, "results"), json.loads(data)
    assert fast == slow
    assert json.dumps(fast) == json.dumps(slow)  # the same types too: an int stays an int


def test_a_results_file_reads_the_same_through_orjson(tmp_path: Path) -> None:
    from perfci.schema import _orjson_reads_as_json, read_json_document

    run = make_run([make_case(f"w{i}", 1e-3 * (1 + i / 7), seed=i) for i in range(20)])
    dump_results(run, tmp_path / "r.json")
    data = (tmp_path / "r.json").read_bytes()
    assert _orjson_reads_as_json(data)  # the fast path is the one taken
    doc = read_json_document(tmp_path / "r.json", "results")
    assert doc == json.loads(data) and load_results(tmp_path / "r.json") == run


def test_compare_imports_neither_the_store_nor_the_workloads() -> None:
    """`perfci compare` loads only its own command: no SQLAlchemy, numpy, jinja2 or psutil at start-up."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom perfci.cli import load_commands\nload_commands(['compare', 'a.json', 'b.json'])\n"
        "print(sorted(m for m in ('sqlalchemy', 'numpy', 'jinja2', 'psutil', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(("slower", "code"), [(1.0, 0), (2.0, 1)])
def test_a_compare_that_keeps_its_runs_until_exit_ends_as_before(tmp_path: Path, slower: float, code: int) -> None:
    """`perfci compare` leaves its runs to the operating system (cli keep_until_exit): stdout complete, exit
    handlers run, the gate's exit code; and no report writer (jinja2) imported without outputs."""
    import subprocess
    import sys

    base = make_run([make_case(f"w{i}", 1e-3, seed=i) for i in range(30)])
    cand = make_run([make_case(f"w{i}", 1e-3 * slower, seed=i + 100) for i in range(30)])
    dump_results(base, tmp_path / "a.json")
    dump_results(cand, tmp_path / "b.json")
    script = (
        "import atexit, sys\n"
        "said = lambda: sys.stderr.write('exit handler ran; jinja2 imported: %s\\n' % ('jinja2' in sys.modules))\n"
        "atexit.register(said)\n"
        "sys.argv = ['perfci', 'compare', 'a.json', 'b.json', '--format', 'json', '--job-noise', '0.01']\n"
        "from perfci.cli import entrypoint\n"
        "entrypoint()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == code, done.stderr
    assert len(json.loads(done.stdout)["rows"]) >= 30
    assert "exit handler ran; jinja2 imported: False" in done.stderr


def test_chart_values_in_bulk_are_rounded_as_one_by_one() -> None:
    import random

    from perfci.reports.charts import r4, r4_all

    rng = random.Random(3)
    xs = [rng.lognormvariate(-8, 4) for _ in range(5000)] + [9.9995, 999.95, 5e-324, 1e300]
    assert r4_all(xs, 3.7) == [r4(x / 3.7) for x in xs]
    assert r4_all([1.0, float("nan"), 2.0]) == [1.0, None, 2.0]


def test_round_median_is_the_median_of_the_per_call_times_bit_for_bit() -> None:
    import random
    import statistics
    import sys

    from perfci.metrics.registry import LATENCY, metric_def
    from perfci.stats.summary import geometric_mean, sorted_median

    rng = random.Random(7)
    case = make_case("a", 1e-3)
    mdef = metric_def(LATENCY)
    for n in (1, 2, 3, 10, 11, 30):
        for _ in range(200):
            samples = tuple(rng.uniform(1e-9, 1.0) for _ in range(n))
            r = replace(case.rounds[0], samples=samples, iterations=rng.randint(1, 10**6))
            fresh = replace(r)  # no cached per-call tuples yet
            assert mdef.values(fresh, case) == sorted_median(r.sorted_per_call)
            assert "sorted_per_call" not in fresh.__dict__  # the fast way took no per-call tuples
            assert mdef.values(r, case) == sorted_median(r.sorted_per_call)  # and the known tuple, once made
            expected = statistics.geometric_mean(samples)
            assert geometric_mean(samples) == pytest.approx(expected, rel=1e-15, abs=0.0)
            if sys.version_info[:2] == (3, 11):  # its definition there: exp(fmean(map(log, data)))
                assert geometric_mean(samples) == expected
