"""A new run into an existing `--out` folder starts with no worker logs of the earlier run; a resumed run keeps
them (engine/runner.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perfci.engine.runner import Runner, RunSettings
from tests.conftest import make_case, make_run


def stale_logs(out: Path) -> list[Path]:
    logs = out / "logs"
    logs.mkdir(parents=True)
    written = [logs / "worker-r0-0.log", logs / "worker-r4-1.log", logs / "worker-r2-A.log", logs / "preload.txt"]
    for path in written:
        path.write_text("from the earlier run\n")
    return written


def test_a_new_run_removes_the_earlier_runs_worker_logs(tmp_path: Path) -> None:
    *workers, preload = stale_logs(tmp_path)
    (tmp_path / "logs" / "build-base.log").write_text("not a worker's\n")
    run = make_run([make_case("a", 1e-3)])
    Runner(RunSettings(peaks_cache=None), tmp_path).start([c.spec for c in run.cases])
    assert not any(p.exists() for p in workers)
    assert preload.exists() and (tmp_path / "logs" / "build-base.log").exists()  # only the worker logs go


def test_a_new_run_into_a_fresh_folder_needs_no_logs_folder(tmp_path: Path) -> None:
    Runner(RunSettings(peaks_cache=None), tmp_path / "new").start([])
    assert not (tmp_path / "new").exists()  # nothing made before a worker writes


def test_a_resumed_run_keeps_the_logs_of_the_rounds_it_keeps(tmp_path: Path) -> None:
    written = stale_logs(tmp_path)
    partial = make_run([make_case("a", 1e-3, rounds=2)])
    Runner(RunSettings(peaks_cache=None, rounds=5), tmp_path).resume([c.spec for c in partial.cases], partial)
    assert all(p.read_text() == "from the earlier run\n" for p in written)


def test_a_worker_that_dies_between_cases_is_replaced_once_then_its_cases_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker killed as it started (an OOM kill, a stray signal) failed every case of the run, for all rounds."""
    from perfci.engine import runner as runner_module
    from perfci.engine.protocol import Error, WorkerFailed
    from perfci.format.model import format_case_id

    specs = [c.spec for c in make_run([make_case("a", 1e-3), make_case("b", 1e-3)]).cases]
    deaths = {"left": 1}
    started: list[list[str]] = []

    def fake_worker(job: Any, limits: object, log: Path, handler: Any, **_: object) -> None:
        started.append([c.workload for c in job.cases])
        if deaths["left"]:
            deaths["left"] -= 1
            handler(WorkerFailed("worker process crashed (SIGKILL)"))
            return
        for c in job.cases:  # a worker that got through: each case ends (here as the workload's own error)
            handler(Error(format_case_id(c.workload, dict(c.params), c.device), "raised", "measured"))

    monkeypatch.setattr(runner_module, "run_worker", fake_worker)
    r = Runner(RunSettings(peaks_cache=None, rounds=2), tmp_path)
    r.start(specs)
    r.run_round(0)
    assert len(started) == 2  # replaced after the death
    assert [e.message for s in specs for e in r.states[s.id].errors] == ["measured", "measured"]  # not the death's
    for s in specs:
        r.states[s.id].errors.clear()
    deaths["left"] = 5
    started.clear()
    r.run_round(1)
    assert len(started) == 2  # once replaced, then given up on: each case left says why
    assert all(r.states[s.id].errors[0].message == "worker process crashed (SIGKILL)" for s in specs)
