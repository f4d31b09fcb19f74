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
    assert text.startswith("### perfci trend, the last 7d: 1 change(s) for the worse, 0 for the better")
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
