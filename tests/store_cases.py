"""Shared checks for the history store, run against a real SQLite file and a real PostgreSQL server."""

from __future__ import annotations

from dataclasses import replace

from perfci.model import RunResult
from perfci.store.history import HistoryStore
from perfci.store.trend import trends
from tests.conftest import make_case, make_run


def history_runs(n: int = 16, step_at: int = 10, factor: float = 1.25) -> list[RunResult]:
    """n runs of two cases; 'alpha' gets `factor` slower from run `step_at` on, 'beta' stays put."""
    runs = []
    for i in range(n):
        scale = factor if i >= step_at else 1.0
        cases = [make_case("alpha", 1e-3, seed=i, scale=scale), make_case("beta", 2e-3, seed=i)]
        run = make_run(cases, run_id=f"run-{i:02d}")
        stamp = f"2026-11-{1 + i:02d}T00:00:00.000000Z"
        git = replace(run.git, commit=f"c{i:03d}") if run.git else None
        runs.append(replace(run, started_at=stamp, finished_at=stamp, git=git))
    return runs


def check_store(store: HistoryStore) -> None:
    runs = history_runs()
    added, skipped = store.ingest_many((r, "cpu-test") for r in runs)
    assert (added, skipped) == (16, 0)
    assert store.ingest_many((r, "cpu-test") for r in runs[:3]) == (0, 3)  # idempotent
    assert store.runners() == ["cpu-test"]
    assert store.cases("cpu-test", "latency.median") == ["t.alpha[n=8]@cpu", "t.beta[n=8]@cpu"]
    series = store.series("cpu-test", "t.alpha[n=8]@cpu", "latency.median")
    assert [p.run_id for p in series] == [f"run-{i:02d}" for i in range(16)]
    assert series[0].value == runs[0].cases[0].metric("latency.median").value  # type: ignore[union-attr]
    by_case = {t.case_id: t for t in trends(store)}
    alpha = by_case["t.alpha[n=8]@cpu"]
    assert [(s.run_id, s.commit) for s in alpha.shifts] == [("run-10", "c010")]
    assert 1.2 < alpha.shifts[0].ratio < 1.3
    assert by_case["t.beta[n=8]@cpu"].shifts == ()
