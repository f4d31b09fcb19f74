"""Speed at scale: cases indexed once, ids made once, documents decoded without per-field copies,
the HTML table paged, large JSON printed plainly, every input file parsed once."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

import perfci.format.model
from perfci.api import report as report_api
from perfci.cli import app
from perfci.compare.decide import compare_runs
from perfci.compare.policy import DecisionSettings
from perfci.format.comparison import dump_comparison
from perfci.format.model import CaseSpec, Metric, format_case_id
from perfci.format.schema import dump_results, load_results
from perfci.reports.html import PAGE_ROWS, render_html
from tests.conftest import make_case, make_run
from tests.report_fixtures import suite_comparison


def test_cases_are_indexed_once_and_lookups_do_not_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    run = make_run([make_case(f"c{i}", 1e-3) for i in range(50)])
    assert run.case("t.c7[n=8]@cpu") is run.cases[7]
    assert run.case("nope") is None
    calls = []
    real = perfci.format.model.format_case_id
    monkeypatch.setattr(perfci.format.model, "format_case_id", lambda *a: calls.append(a) or real(*a))
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


def test_load_round_trips(tmp_path: Path) -> None:
    run = make_run([make_case("a", 1e-3), make_case("b", 2e-3)])
    dump_results(run, tmp_path / "r.json")
    loaded = load_results(tmp_path / "r.json")
    assert loaded == run
    assert loaded.cases[0].rounds[0].per_call == run.cases[0].rounds[0].per_call


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


def test_report_reads_each_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base, cand = make_run([make_case("a", 1e-3)]), make_run([make_case("a", 1.1e-3, seed=2)])
    dump_results(base, tmp_path / "b.json")
    dump_results(cand, tmp_path / "c.json")
    dump_comparison(compare_runs(base, cand, DecisionSettings()), tmp_path / "cmp.json")
    read: list[Path] = []
    real = report_api.read_bytes

    def counted(path: Path, kind: str) -> bytes:
        read.append(path)
        return real(path, kind)

    monkeypatch.setattr(report_api, "read_bytes", counted)
    inputs = report_api.load_inputs([tmp_path / "cmp.json", tmp_path / "b.json", tmp_path / "c.json"], 0.05)
    assert read == [tmp_path / "cmp.json", tmp_path / "b.json", tmp_path / "c.json"]
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
def test_a_bad_file_is_one_clear_refusal(tmp_path: Path, data: bytes) -> None:
    """msgspec refuses, and the words come from the json module: the line and column, or the place."""
    from perfci.errors import ResultsFormatError
    from perfci.format.jsonfile import parse_json, read_bytes

    path = tmp_path / "r.json"
    path.write_bytes(data)
    with pytest.raises(ResultsFormatError) as refused:
        parse_json(read_bytes(path, "results"), str(path), "results")
    assert refused.value.message.startswith(f"{path}: ") and "\n" not in refused.value.message
    assert re.search(r"not valid JSON|not a finite number|surrogate|cannot read|nests deeper", refused.value.message)


GOOD_FILES = [
    b'{"a": 12345678901234567890, "b": [-1234567890123456789, 1.5]}',
    b'{"a": 123456789012345678, "b": "1234567890123456789012", "c": 0.000123456789012345678901}',
    b'{"a": 1e-400, "b": -0.0, "c": 1E5, "d": "\\ud83d\\ude00", "e": {"k": 1, "k": 2}}',
]


@pytest.mark.parametrize("data", GOOD_FILES)
def test_a_good_file_reads_as_by_the_json_module(tmp_path: Path, data: bytes) -> None:
    from perfci.format.jsonfile import parse_json, read_bytes

    path = tmp_path / "r.json"
    path.write_bytes(data)
    fast, slow = parse_json(read_bytes(path, "results"), str(path), "results"), json.loads(data)
    assert fast == slow
    assert json.dumps(fast) == json.dumps(slow)  # the same types too: an int stays an int


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


@pytest.mark.parametrize("command", [["run"], ["ci"], ["list"], ["merge", "a.json", "b.json"], ["--version"]])
def test_commands_that_do_not_open_the_store_do_not_import_sqlalchemy(command: list[str]) -> None:
    """`perfci run` (and `ci`, `list`, `merge`, `--version`) read the history store only where asked to: SQLAlchemy,
    0.4-0.6 s of their start on the 2-core VM, is imported when the store is opened."""
    import subprocess
    import sys

    code = (
        f"import sys\nfrom perfci.cli import load_commands\nload_commands({command!r})\n"
        "print('sqlalchemy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_history_ingest_starts_its_workers_before_the_database_driver_is_imported() -> None:
    """`perfci history ingest` registers only its command, and nothing imports SQLAlchemy (0.3 s of CPU on this
    2-core machine) before the file-reading workers are forked: it is imported inside `ingest`."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom perfci.cli import load_commands\n"
        "app = load_commands(['history', 'ingest', 'r.json'])\n"
        "import perfci.api.ingest\n"
        "print(sorted(m for m in ('sqlalchemy', 'numpy', 'jinja2', 'perfci.cli.history', 'perfci.store.history')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(("slower", "code"), [(1.0, 0), (2.0, 1)])
def test_a_compare_that_keeps_its_runs_until_exit_ends_as_before(tmp_path: Path, slower: float, code: int) -> None:
    """`perfci compare` ends through the normal shutdown (cli/exits.py): stdout complete, exit handlers run, the
    gate's exit code; and no report writer (jinja2) imported without outputs."""
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
            assert r.sorted_per_call == tuple(sorted(r.per_call))  # sorted then divided: the same floats
            expected = statistics.geometric_mean(samples)
            assert geometric_mean(samples) == pytest.approx(expected, rel=1e-15, abs=0.0)
            if sys.version_info[:2] == (3, 11):  # its definition there: exp(fmean(map(log, data)))
                assert geometric_mean(samples) == expected
