"""`perfci trend` and `perfci history list|export` on real SQLite stores: what stdout holds (`--markdown -`,
`history export --out -`), the gate deciding on the whole history whatever `--since` shows, the table, the
digest, the summary and the page calling a recent step alike, `--min-effect` written as a fraction, relative
`--since`/`--until` for the run list, and window titles."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from perfci.cli import app
from perfci.format.model import RunResult
from perfci.reports.trend_text import trend_table
from perfci.store.history import HistoryStore, Point
from perfci.store.trend import Shift, Trend
from tests.conftest import make_case, make_run
from tests.store_cases import history_runs

NOW = datetime.now(UTC)


def _utc(days_ago: float) -> str:
    return (NOW - timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def _store(tmp_path: Path, runs: list[RunResult]) -> str:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    HistoryStore(db).ingest_many((r, "cpu-test") for r in runs)
    return db


def _recent_runs(scales: list[dict[str, float]], days_apart: float = 1.0) -> list[RunResult]:
    """One run per entry, the latest half a day ago and each earlier one `days_apart` before it; each entry maps a
    case name to its speed factor (1.0 = 1 ms)."""
    runs = []
    for i, by_case in enumerate(scales):
        cases = [make_case(name, 1e-3, seed=i, scale=scale, noise=0.002) for name, scale in by_case.items()]
        run = make_run(cases, run_id=f"run-{i:02d}")
        stamp = _utc(0.5 + (len(scales) - 1 - i) * days_apart)
        git = replace(run.git, commit=f"c{i:03d}") if run.git else None
        runs.append(replace(run, started_at=stamp, finished_at=stamp, git=git))
    return runs


def _invoke(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, list(args), terminal_width=300)
    return res.exit_code, res.stdout, res.stderr


# 1. `--markdown -`: stdout holds the Markdown alone


def test_markdown_to_stdout_keeps_stdout_to_the_markdown(tmp_path: Path) -> None:
    db = _store(tmp_path, history_runs())  # alpha 25% slower from run 10 of 16
    code, out, err = _invoke("trend", "--db", db, "--markdown", "-")
    assert code == 0, err
    assert out.startswith("### perfci trend: 1 worse, 0 better since their last change point, 1 steady (2 case(s))")
    assert "in the latest 20 runs" not in out and "┃" not in out  # no table before or after it
    written = tmp_path / "summary.md"
    assert _invoke("trend", "--db", db, "--markdown", str(written))[0] == 0
    assert out.rstrip("\n") == written.read_text().rstrip("\n")  # the same document as --markdown FILE writes
    # the gate's lines go to stderr: stdout is still the Markdown alone
    code, out, err = _invoke("trend", "--db", db, "--markdown", "-", "--check", "6")
    assert code == 1 and out.startswith("### perfci trend: 1 worse") and "FAIL: 1 case(s)" in err
    assert "FAIL" not in out


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_markdown_to_stdout_refuses_a_second_document_there(tmp_path: Path, fmt: str) -> None:
    db = _store(tmp_path, history_runs())
    code, out, err = _invoke("trend", "--db", db, "--format", fmt, "--markdown", "-")
    assert code == 2 and out == ""
    assert err.splitlines()[0] == (
        f"error: --markdown - writes the Markdown summary to stdout, where --format {fmt} prints too."
    )
    # to a file, both work: stdout holds the --format output alone
    code, out, _ = _invoke("trend", "--db", db, "--format", fmt, "--markdown", str(tmp_path / "s.md"))
    assert code == 0 and (tmp_path / "s.md").read_text().startswith("### perfci trend: 1 worse")
    if fmt == "json":
        assert [t["status"] for t in json.loads(out)] == ["worse", "steady"]
    else:
        assert out.count("### perfci trend") == 1


# 2. `--check` decides on the whole history; `--since` only filters what is shown


def test_check_with_since_names_a_single_big_step_as_a_change_not_a_drift(tmp_path: Path) -> None:
    """10 runs, 2026-11-01 to -10; alpha 189% slower from run 6 (2026-11-06). `--since 2026-11-07` leaves that
    change point out of the rows; the gate still sees it, as the one step it was."""
    db = _store(tmp_path, history_runs(10, step_at=5, factor=2.894))
    for since in ((), ("--since", "2026-11-07")):
        code, out, err = _invoke("trend", "--db", db, "--check", "5", *since)
        assert code == 1, err
        assert (
            re.search(r"t\.alpha\[n=8\]@cpu: latency\.median \+18[89]\.\d% ", err)
            and "from run run-05 (commit c005, 2026-11-06)" in err
        )
        assert "in steps below the threshold" not in err
        assert "FAIL: 1 case(s) got worse within their latest 5 runs, 0 drifted past the threshold" in err
    # the window shows no change point (the step is before it), and says so: the gate is not the table
    assert "0 worse, 0 better since 2026-11-07, 2 steady" in " ".join(out.split())
    # the step is older than the latest 4 runs: the gate passes, with or without the window
    for since in ((), ("--since", "2026-11-07")):
        code, _, err = _invoke("trend", "--db", db, "--check", "4", *since)
        assert code == 0 and "PASS: 0 case(s) got worse within their latest 4 runs, 0 drifted" in err, err


# 3. the table, the JSON, the digest, the summary and the page call a recent step alike


def test_a_step_too_recent_to_call_is_called_so_everywhere(tmp_path: Path) -> None:
    """Runs 1-7, one a day; 'a' 30% slower in runs 6 and 7: too early for a change point (3 runs on each side)."""
    scales = [{"a": 1.3 if i >= 5 else 1.0, "b": 1.0, "c": 1.0, "d": 1.0} for i in range(7)]
    db = _store(tmp_path, _recent_runs(scales))
    for since in ((), ("--since", "7d")):
        code, out, err = _invoke("trend", "--db", db, *since)
        assert code == 0, err
        window = " in the last 7d" if since else ""  # the title names the window the rows were cut to
        assert f"4 case(s), 0 worse, 0 better{window}, 3 steady, 1 too recent to call" in out
        statuses = {line.split()[1]: line.split("│")[-3].strip() for line in out.splitlines() if "@cpu" in line}
        assert statuses == {
            "t.a[n=8]@cpu": "too recent",
            "t.b[n=8]@cpu": "steady",
            "t.c[n=8]@cpu": "steady",
            "t.d[n=8]@cpu": "steady",
        }
        assert next(line for line in out.splitlines() if "@cpu" in line).split()[1] == "t.a[n=8]@cpu"  # first
        code, out, _ = _invoke("trend", "--db", db, "--format", "json", *since)
        assert {t["case_id"]: t["status"] for t in json.loads(out)}["t.a[n=8]@cpu"] == "too recent"
        code, out, _ = _invoke("trend", "--db", db, "--markdown", "-", *since)
        assert "0 worse, 0 better" in out and "3 steady, 1 too recent to call (4 case(s))" in out
    code, out, _ = _invoke("trend", "--db", db, "--format", "markdown", "--since", "7d")
    assert out.splitlines()[0] == (
        "### perfci trend, the last 7d: 0 change(s) for the worse, 0 for the better, 1 too recent to call"
    )
    assert "3 case(s) ran in the window without a change" in out
    page = tmp_path / "trend.html"
    assert _invoke("trend", "--db", db, "--html", str(page))[0] == 0
    html = page.read_text()
    assert "0 worse and 0 better since their last change point, 3 steady, 1 too recent to call" in html
    assert _invoke("trend", "--db", db, "--html", str(page), "--since", "7d")[0] == 0
    assert "0 worse and 0 better in the last 7d, 3 steady, 1 too recent to call" in page.read_text()
    assert '<option value="too recent">too recent (1)</option>' in html


def test_a_since_window_measures_a_recent_step_from_the_level_since_the_last_change_point(tmp_path: Path) -> None:
    """20 runs, one a day; 'a' 30% slower from run 13, 7.5 days ago: before a 7d window. Its latest runs are at the
    new level, so nothing is too recent to call, although most of the history is at the old one."""
    db = _store(tmp_path, _recent_runs([{"a": 1.3 if i >= 12 else 1.0, "b": 1.0} for i in range(20)]))
    code, out, err = _invoke("trend", "--db", db, "--since", "7d")
    assert code == 0, err
    assert "2 case(s), 0 worse, 0 better in the last 7d, 2 steady;" in out and "too recent" not in out
    digest = _invoke("trend", "--db", db, "--format", "markdown", "--since", "7d")[1]
    assert "0 for the better\n" in digest and "2 case(s) ran in the window without a change" in digest


# 4. `--min-effect` as every fraction is written


def test_min_effect_takes_a_percentage_or_a_fraction_within_its_bounds(tmp_path: Path) -> None:
    db = _store(tmp_path, history_runs())
    code, as_percent, err = _invoke("trend", "--db", db, "--format", "json", "--min-effect", "3%")
    assert code == 0, err
    assert as_percent == _invoke("trend", "--db", db, "--format", "json", "--min-effect", "0.03")[1]
    # a 25% step is not reported at 30%, and is at 20%
    assert {
        t["status"] for t in json.loads(_invoke("trend", "--db", db, "--format", "json", "--min-effect", "30%")[1])
    } == {"steady"}
    assert "worse" in _invoke("trend", "--db", db, "--format", "json", "--min-effect", "20%")[1]
    for bad, hint in (("5", "write 5% for 5 percent"), ("nan", "not a fraction from 0 up"), ("1001%", "from 0 to 10")):
        code, out, err = _invoke("trend", "--db", db, "--min-effect", bad)
        lines = err.splitlines()
        assert code == 2 and out == "" and "Traceback" not in err, err
        assert lines[0] == f"error: --min-effect must be a fraction above 0 and at most 10 (3% or 0.03), not {bad!r}."
        assert hint in lines[1]
    code, _, err = _invoke("trend", "--db", db, "--min-effect", "0%")  # the API's bound: above 0
    assert code == 2 and err.startswith("error: --min-effect must be a fraction above 0 and at most 10")


# 5. `history list|export --since/--until` take what `trend --since` takes


def test_history_list_and_export_take_relative_windows(tmp_path: Path) -> None:
    db = _store(tmp_path, _recent_runs([{"a": 1.0}] * 10))  # 0.5 to 9.5 days ago
    code, out, err = _invoke("history", "list", "--db", db, "--since", "7d", "--format", "json")
    assert code == 0, err
    assert [r["run_id"] for r in json.loads(out)] == [f"run-{i:02d}" for i in range(9, 2, -1)]  # 7 runs, newest first
    older = json.loads(_invoke("history", "list", "--db", db, "--until", "7d", "--format", "json")[1])
    assert [r["run_id"] for r in older] == ["run-02", "run-01", "run-00"]
    for span, n in (("2d", 2), ("1w", 7), ("4W", 10)):
        assert len(json.loads(_invoke("history", "list", "--db", db, "--since", span, "--format", "json")[1])) == n
    # a date still means from its start (--since) or to its end (--until)
    day = _utc(0.5)[:10]
    on_day = json.loads(_invoke("history", "list", "--db", db, "--since", day, "--until", day, "--format", "json")[1])
    assert "run-09" in [r["run_id"] for r in on_day]
    out_csv = tmp_path / "m.csv"
    code, _, err = _invoke("history", "export", "--db", db, "--since", "7d", "--out", str(out_csv))
    assert code == 0 and len({row["run_id"] for row in csv.DictReader(out_csv.open())}) == 7, err
    code, _, err = _invoke("history", "list", "--db", db, "--since", "7x")
    assert code == 2 and err.startswith("error: --since '7x' is not an ISO date or time."), err


# 6. a window's title: `the last 7d` for a span, `since DATE` for a date


def test_titles_say_since_a_date_and_the_last_span(tmp_path: Path) -> None:
    db = _store(tmp_path, _recent_runs([{"a": 1.25 if i >= 10 else 1.0, "b": 1.0} for i in range(16)]))
    day = _utc(8)[:10]  # 'a' got slower 5.5 days ago
    digest = _invoke("trend", "--db", db, "--format", "markdown", "--since", day)[1]
    assert digest.startswith(f"### perfci trend, since {day}: 1 change(s) for the worse, 0 for the better")
    assert "the last 2" not in digest
    summary = _invoke("trend", "--db", db, "--markdown", "-", "--since", day)[1]
    assert summary.startswith(f"### perfci trend: 1 worse, 0 better since {day}, 1 steady (2 case(s))")
    recent = _invoke("trend", "--db", db, "--markdown", "-", "--since", "2d")[1]  # after the change
    assert recent.startswith("### perfci trend: 0 worse, 0 better in the last 2d, 2 steady (2 case(s))")
    assert _invoke("trend", "--db", db, "--format", "markdown", "--since", "30d")[1].startswith(
        "### perfci trend, the last 30d: 1 change(s) for the worse"
    )


# 7. `history export --out -`: CSV on stdout, Parquet refused


def test_export_to_stdout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    db = _store(tmp_path, history_runs(4))
    code, out, err = _invoke("history", "export", "--db", db, "--out", "-")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) > 0 and {r["run_id"] for r in rows} == {f"run-{i:02d}" for i in range(4)}
    assert err.strip() == f"exported {len(rows)} row(s) to stdout" and not (tmp_path / "-").exists()
    assert _invoke("history", "export", "--db", db, "--out", "to-file.csv")[0] == 0
    assert (tmp_path / "to-file.csv").read_text() == out
    code, out, err = _invoke("history", "export", "--db", db, "--out", "-", "--format", "parquet")
    assert code == 2 and out == "" and not (tmp_path / "-").exists()
    assert err.splitlines()[0] == "error: --out - writes to stdout, and Parquet is binary."


# 8. the terminal table: worst first at any size


def test_a_small_table_lists_the_worst_first() -> None:
    points = tuple(Point(f"r{i}", f"c{i}", f"2026-11-{10 + i}T00:00:00Z", 1e-3, None, None, "s") for i in range(8))
    slower = Shift("r4", "c4", points[4].started_at, 1e-3, 1.2e-3, 1.2, 0.001, 4)
    faster = Shift("r4", "c4", points[4].started_at, 1e-3, 0.9e-3, 0.9, 0.001, 4)
    items = [
        Trend("cpu", "a.steady@cpu", "latency.median", points, ()),
        Trend("cpu", "b.short@cpu", "latency.median", points[:4], ()),
        Trend("cpu", "c.faster@cpu", "latency.median", points, (faster,)),
        Trend("cpu", "d.slower@cpu", "latency.median", points, (slower,)),
    ]
    console = Console(width=200, record=True, no_color=True)
    console.print(trend_table(items))
    order = [line.split()[1] for line in console.export_text().splitlines() if "@cpu" in line]
    assert order == ["d.slower@cpu", "c.faster@cpu", "a.steady@cpu", "b.short@cpu"]


def test_a_mistyped_metric_is_named_not_blamed_on_the_store(tmp_path: Path) -> None:
    """`trend --metric latency.mean` said the store had no values and hinted at ingesting runs (a user audit)."""
    db = _store(tmp_path, history_runs(3))
    code, _, err = _invoke("trend", "--db", db, "--metric", "latency.mean")
    assert code == 2 and "--metric: unknown metric 'latency.mean'; known: latency.median" in err, err
    assert "history ingest" not in err
    code, _, err = _invoke("trend", "--db", db, "--metric", "accuracy.rel_l2")  # known, but never stored here
    assert code == 2 and "the history store has no values of 'accuracy.rel_l2'" in err, err
