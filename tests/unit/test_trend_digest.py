"""`perfci trend --format markdown --since 7d`: a digest a lead can paste into an email or a chat message: what
moved in the window, per case, with the change, commit and date, and how many more runs a change too recent to
call still needs."""

from __future__ import annotations

import inspect
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.api.history import since_cutoff
from perfci.cli import app
from perfci.errors import UsageError
from perfci.format.schema import dump_results
from perfci.reports.trend_counts import Call, headline_counts, move_call, trend_call
from perfci.reports.trend_text import trend_digest
from perfci.stats.changepoint import detect_change_points
from perfci.store.history import Point
from perfci.store.movers import CALL_RUNS, window_moves
from perfci.store.trend import Shift, Trend
from tests.conftest import make_case, make_run

NOW = datetime.now(UTC)


def _utc(days_ago: float) -> str:
    return (NOW - timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def test_a_store_with_two_runs_gives_a_digest(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    for i, scale in enumerate((1.0, 1.2)):
        path = tmp_path / f"r{i}.json"
        cases = [make_case("a", 1e-3 * scale, seed=i), make_case("b", 1e-3, seed=i)]
        run = replace(make_run(cases), started_at=_utc(2 - i), finished_at=_utc(2 - i))
        dump_results(replace(run, git=replace(run.git, commit=f"c0ffee{i}")) if run.git else run, path)
        assert CliRunner().invoke(app, ["history", "ingest", str(path), "--db", db]).exit_code == 0
    res = CliRunner().invoke(app, ["trend", "--db", db, "--format", "markdown", "--since", "7d"])
    assert res.exit_code == 0, res.output
    text = res.stdout
    # two runs cannot call a change: the headline counts it as its row says, too early to call
    assert text.startswith("### perfci trend, the last 7d: 0 change(s) for the worse, 0 for the better, 1 too recent")
    row = next(line for line in text.splitlines() if "t.a[n=8]@cpu" in line)
    assert "(slower)" in row and "+2" in row and "`c0ffee1`" in row and _utc(1)[:10] in row
    assert "too early to call" in row and "2 more run(s) needed" in row
    assert "1 case(s) ran in the window without a change" in text
    for jargon in ("regime", "Bonferroni", "change point"):
        assert jargon not in text
    # a window the runs are not in: nothing moved, and the cases are said to have had no run
    res = CliRunner().invoke(app, ["trend", "--db", db, "--format", "markdown", "--since", "12h"])
    assert res.exit_code == 0 and "Nothing moved." in res.stdout and "2 case(s) did not run in it" in res.stdout


def _trend(values: list[float], days: list[float], shifts: tuple[int, ...] = (), case: str = "k@cpu") -> Trend:
    pairs = enumerate(zip(values, days, strict=True))
    points = tuple(Point(f"r{i}", f"c{i}", _utc(d), v, None, None, "s") for i, (v, d) in pairs)
    made = tuple(Shift(f"r{i}", f"c{i}", points[i].started_at, 1.0, 1.2, 1.2, 0.001, i) for i in shifts)
    return Trend("ci", case, "latency.median", points, made)


def test_window_moves_called_recent_and_quiet() -> None:
    days = [9, 8, 7.5, 6, 5, 4, 3, 2]
    called = _trend([1.0] * 4 + [1.2] * 4, days, shifts=(4,), case="called@cpu")
    recent = _trend([1.0] * 6 + [1.3] * 2, days, case="recent@cpu")
    steady = _trend([1.0] * 8, days, case="steady@cpu")
    old = _trend([1.0] * 4 + [1.2] * 4, [30 - i for i in range(8)], shifts=(4,), case="old@cpu")
    moves, n_steady, quiet = window_moves([called, recent, steady, old], _utc(7), 0.03)
    by_case = {m.case_id: m for m in moves}
    assert set(by_case) == {"called@cpu", "recent@cpu"} and n_steady == 1 and quiet == 1
    assert by_case["called@cpu"].called and by_case["called@cpu"].commit == "c4"
    step = by_case["recent@cpu"]
    assert not step.called and step.run_id == "r6" and step.ratio == pytest.approx(1.3) and step.worse
    assert step.more_runs == CALL_RUNS - 2 and step.runs_before == 6
    text = trend_digest(moves, n_steady, quiet, "7d", "latency.median")
    assert "confirmed by the runs since" in text and "too recent to call: at least 1 more run(s) needed" in text
    assert "+30.0% (slower)" in text and "+20.0% (slower)" in text


def test_a_step_that_moved_back_is_not_a_move() -> None:
    days = [6, 5, 4, 3, 2, 1]
    bumped = _trend([1.0, 1.0, 1.0, 1.0, 1.3, 1.0], days)  # one slow run, then back: not a move
    moves, steady, _ = window_moves([bumped], _utc(7), 0.03)
    assert moves == [] and steady == 1


def test_memory_moves_are_said_as_sizes() -> None:
    t = replace(_trend([1e8] * 5 + [1.1e8], [6, 5, 4, 3, 2, 1]), metric="memory.host")
    moves, _, _ = window_moves([t], _utc(7), 0.03)
    assert "(grew)" in trend_digest(moves, 0, 0, "7d", "memory.host")


def test_call_runs_is_the_detectors_segment_size() -> None:
    assert inspect.signature(detect_change_points).parameters["min_size"].default == CALL_RUNS


def test_since_takes_spans_and_dates() -> None:
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    assert since_cutoff("7d", now) == "2026-11-25T12:00:00Z"
    assert since_cutoff("30d", now) == "2026-11-02T12:00:00Z"
    assert since_cutoff("12h", now) == "2026-12-02T00:00:00Z"
    assert since_cutoff("2026-11-01", now) == "2026-11-01T00:00:00Z"
    with pytest.raises(UsageError, match="7d, 12h or 4w"):
        since_cutoff("last tuesday", now)


def _ingest(tmp_path: Path, db: str, scales: list[tuple[float, float]]) -> None:
    for i, (a, b) in enumerate(scales):
        path = tmp_path / f"r{i}.json"
        run = make_run([make_case("a", 1e-3 * a, seed=i, noise=0.002), make_case("b", 1e-3 * b, seed=i, noise=0.002)])
        days = len(scales) - i
        run = replace(run, started_at=_utc(days), finished_at=_utc(days), git=replace(run.git, commit=f"c0ffee{i}"))
        dump_results(run, path)
        assert CliRunner().invoke(app, ["history", "ingest", str(path), "--db", db]).exit_code == 0


def test_digest_terminal_and_page_headlines_count_what_their_rows_call(tmp_path: Path) -> None:
    """4 runs, one case 30% slower and one 30% faster in the latest: too early for a change point, so every
    headline counts 0 worse and 0 better (and 0 steady), and the digest says both are too early to call, as its rows
    do."""
    db = f"sqlite:///{tmp_path / 'h.db'}"
    _ingest(tmp_path, db, [(1.0, 1.0), (1.0, 1.0), (1.0, 1.0), (1.3, 0.7)])
    digest = CliRunner().invoke(app, ["trend", "--db", db, "--format", "markdown", "--since", "7d"])
    assert digest.exit_code == 0, digest.output
    head = digest.stdout.splitlines()[0]
    assert head == "### perfci trend, the last 7d: 0 change(s) for the worse, 0 for the better, 2 too recent to call"
    rows = [line for line in digest.stdout.splitlines() if "@cpu" in line]
    assert len(rows) == 2 and all("to call: at least" in row for row in rows)
    html = tmp_path / "trend.html"
    table = CliRunner().invoke(app, ["trend", "--db", db, "--html", str(html)], terminal_width=300)
    assert table.exit_code == 0, table.output
    # 4 runs are too few to show a change point (3 on each side): not "steady", whatever the latest run did
    assert "2 case(s), 0 worse, 0 better, 0 steady, 2 with too few runs" in " ".join(table.stdout.split())
    assert sum("too few runs" in line for line in table.stdout.splitlines() if "@cpu" in line) == 2
    assert "0 worse and 0 better since their last change point, 0 steady, 2 with too few runs" in html.read_text()


def test_headline_counts_come_from_the_row_calls() -> None:
    days = [9, 8, 7.5, 6, 5, 4, 3, 2]
    called = _trend([1.0] * 4 + [1.2] * 4, days, shifts=(4,), case="called@cpu")
    recent = _trend([1.0] * 6 + [1.3] * 2, days, case="recent@cpu")
    faster = _trend([1.0] * 6 + [0.7] * 2, days, case="faster@cpu")
    moves, steady, quiet = window_moves([called, recent, faster], _utc(7), 0.03)
    assert {m.case_id: move_call(m) for m in moves} == {
        "called@cpu": Call.WORSE,
        "recent@cpu": Call.TOO_RECENT,
        "faster@cpu": Call.TOO_RECENT,
    }
    n = headline_counts(move_call(m) for m in moves)
    assert (n.worse, n.better, n.steady, n.uncalled, n.total) == (1, 0, 0, 2, 3)
    text = trend_digest(moves, steady, quiet, "7d", "latency.median")
    assert text.startswith("### perfci trend, the last 7d: 1 change(s) for the worse, 0 for the better, 2 too recent")
    assert sum("confirmed by the runs since" in line for line in text.splitlines()) == n.worse + n.better
    assert sum("to call" in line for line in text.splitlines() if line.startswith("|")) == n.uncalled
    cases = headline_counts(trend_call(t) for t in (called, recent, faster))  # by change points alone
    assert (cases.worse, cases.better, cases.steady, cases.uncalled) == (1, 0, 2, 0)
