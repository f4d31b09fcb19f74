"""Issue #20: `perfci trend --check` fails when below-threshold slowdowns since the last change point add up."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from typer.testing import CliRunner

from perfci.cli import app
from perfci.format.model import RunResult
from perfci.store.history import HistoryStore
from perfci.store.trend import drift, trends
from tests.conftest import make_case, make_run


def stepped_runs(steps: int, per_step: int = 10, step: float = 0.015) -> list[RunResult]:
    """`(steps + 1) * per_step` runs of 'alpha' (+`step` slower after every `per_step` runs) and a steady 'beta'."""
    runs = []
    for i in range((steps + 1) * per_step):
        scale = (1.0 + step) ** (i // per_step)
        cases = [make_case("alpha", 1e-3, seed=i, scale=scale, noise=0.002), make_case("beta", 2e-3, seed=i)]
        run = make_run(cases, run_id=f"run-{i:02d}")
        stamp = f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}T00:00:00.000000Z"
        git = replace(run.git, commit=f"c{i:03d}") if run.git else None
        runs.append(replace(run, started_at=stamp, finished_at=stamp, git=git))
    return runs


def _store(tmp_path: Path, runs: list[RunResult]) -> str:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    HistoryStore(db).ingest_many((r, "cpu-test") for r in runs)
    return db


def test_three_small_steps_add_up_and_name_their_runs(tmp_path: Path) -> None:
    db = _store(tmp_path, stepped_runs(3))
    alpha = next(t for t in trends(HistoryStore(db)) if "alpha" in t.case_id)
    assert not alpha.shifts  # each step is below the 3% threshold: no change point
    d = drift(alpha, 0.03)
    assert d is not None and 1.035 < d.total < 1.055
    assert [s.run_id for s in d.steps] == ["run-10", "run-20", "run-30"]
    res = CliRunner().invoke(app, ["trend", "--db", db, "--check", "15"])
    assert res.exit_code == 1, res.output
    assert "in steps below the threshold: run-10 (c010) +1." in res.stderr and "run-30 (c030)" in res.stderr
    assert "1 drifted past the threshold in smaller steps" in res.stderr


def test_one_small_step_is_not_drift(tmp_path: Path) -> None:
    db = _store(tmp_path, stepped_runs(1))
    alpha = next(t for t in trends(HistoryStore(db)) if "alpha" in t.case_id)
    assert drift(alpha, 0.03) is None
    res = CliRunner().invoke(app, ["trend", "--db", db, "--check", "15"])
    assert res.exit_code == 0, res.output
    assert "PASS: 0 case(s) got worse within their latest 15 runs, 0 drifted" in res.stderr


def test_a_speed_up_in_between_offsets_the_slowdowns() -> None:
    runs = stepped_runs(3)
    for i in range(20, 40):  # from run 20 on, alpha is back where it started, then steps once: net +1.5%
        scale = 1.015 if i >= 30 else 1.0
        cases = [make_case("alpha", 1e-3, seed=i, scale=scale, noise=0.002), runs[i].cases[1]]
        runs[i] = replace(runs[i], cases=tuple(cases))
    store = HistoryStore("sqlite://")
    store.ingest_many((r, "cpu-test") for r in runs)
    alpha = next(t for t in trends(store) if "alpha" in t.case_id)
    assert drift(alpha, 0.03) is None
