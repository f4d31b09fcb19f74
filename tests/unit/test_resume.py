"""`perfci run --resume`: the refusal rules, the workloads' content hash, and the merge of the kept rounds with the
ones measured after the resume (a fake worker: no processes)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import perfci.engine.runner as runner_mod
from perfci.engine.protocol import Error, Job, Result
from perfci.engine.resume import check_resumable, refusal, workloads_digest
from perfci.engine.runner import Runner, RunSettings
from perfci.engine.supervisor import EventHandler
from perfci.errors import UsageError
from perfci.format.model import CaseSpec, GitInfo, Round, RunResult
from perfci.format.schema import load_results

FP = {"machine": "x86_64", "cpu_model": "Test CPU", "cpu_logical_cores": 4, "python": "3.11.7", "libraries": {}}
GIT = GitInfo(commit="abc123", branch="main", dirty=False)
SPECS = [CaseSpec("w.add", {"n": n}, "cpu", source="w.py") for n in (1, 2, 3)]
SETTINGS = RunSettings(rounds=4, seed=7, peaks_cache=None)


@pytest.fixture
def worker(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, list[str]]]:
    """A fake worker: each case's round gets samples made from its id and the round; `fails` cases raise."""
    calls: list[tuple[int, list[str]]] = []

    def run_worker(job: Job, limits: Any, log: Path, on_event: EventHandler, **_: Any) -> None:
        calls.append((job.round_index, [c.id for c in job.cases]))
        for c in job.cases:
            if c.params["n"] == 3 and job.round_index == 1:
                on_event(Error(c.id, "raised", "ValueError: bad"))
                continue
            base = 1e-6 * (c.params["n"] + job.round_index / 10)  # type: ignore[operator]
            samples = tuple(base * (1 + i / 100) for i in range(5))
            pid = 100 + job.round_index
            on_event(Result(c.id, None, 8.0, Round(0, pid, 10, samples, 0.01, "budget", 1)))

    monkeypatch.setattr(runner_mod, "run_worker", run_worker)
    monkeypatch.setattr(runner_mod, "fingerprint", lambda: dict(FP))
    monkeypatch.setattr(runner_mod, "git_info", lambda cwd: GIT)
    return calls


def _runner(out: Path) -> Runner:
    return Runner(SETTINGS, out, extra_settings={"workloads": "sha256:w"})


def test_resume_measures_only_the_missing_rounds_in_the_uninterrupted_order(
    tmp_path: Path, worker: list[tuple[int, list[str]]]
) -> None:
    whole = _runner(tmp_path / "whole").run(SPECS)
    uninterrupted = list(worker)
    worker.clear()

    first = _runner(tmp_path / "cut")
    first.start(SPECS)
    first.run_round(0)
    first.run_round(1)  # killed here: the file holds rounds 0 and 1, complete false
    partial = load_results(tmp_path / "cut" / "results.json")
    assert partial.settings["complete"] is False
    kept_rounds = {c.id: c.rounds for c in partial.cases}
    worker.clear()

    resumed = _runner(tmp_path / "cut").run(list(reversed(SPECS)), resume_from=partial)
    assert worker == uninterrupted[2:]  # rounds 2 and 3 only, each in the order the whole run used
    assert [c.id for c in resumed.cases] == [c.id for c in whole.cases]
    for case, ref in zip(resumed.cases, whole.cases, strict=True):
        assert [r.index for r in case.rounds] == [r.index for r in ref.rounds]
        assert [r.samples for r in case.rounds] == [r.samples for r in ref.rounds]
        assert case.rounds[: len(kept_rounds[case.id])] == kept_rounds[case.id]  # kept as they were
        assert case.errors == ref.errors and case.status == ref.status
    # the erroring case (round 1) is not measured again, as in an uninterrupted run
    assert resumed.case("w.add[n=3]@cpu").errors[0].round_index == 1  # type: ignore[union-attr]
    assert (resumed.run_id, resumed.started_at) == (partial.run_id, partial.started_at)
    note = resumed.settings.pop("resumed")
    assert note[0]["rounds_kept"] == 5 and note[0]["at"]  # 2 + 2 + 1 (n=3 errored in round 1)
    assert resumed.settings == whole.settings
    assert load_results(tmp_path / "cut" / "results.json").settings["complete"] is True


def test_a_second_resume_adds_a_note_and_a_complete_file_measures_nothing(
    tmp_path: Path, worker: list[tuple[int, list[str]]]
) -> None:
    r = _runner(tmp_path)
    r.start(SPECS)
    r.run_round(0)
    once = _runner(tmp_path)
    once.resume(SPECS, load_results(tmp_path / "results.json"))
    once.run_round(1)  # killed again after round 1
    worker.clear()
    done = _runner(tmp_path).run(SPECS, resume_from=load_results(tmp_path / "results.json"))
    assert [c[0] for c in worker] == [2, 3]
    assert [n["rounds_kept"] for n in done.settings["resumed"]] == [3, 5]
    worker.clear()
    again = _runner(tmp_path).run(SPECS, resume_from=load_results(tmp_path / "results.json"))
    assert worker == [] and again.settings["resumed"] == done.settings["resumed"]
    assert again.cases == done.cases


def _partial(**changes: Any) -> RunResult:
    settings = {**SETTINGS.as_dict(), "workloads": "sha256:w", "complete": False}
    run = RunResult("r1", "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", dict(FP), GIT, settings, ())
    return replace(run, **changes)


WANTED = {**SETTINGS.as_dict(), "workloads": "sha256:w"}


def test_refusals_name_what_differs() -> None:
    ids: list[str] = []
    assert refusal(_partial(), WANTED, ids, dict(FP), GIT) is None
    assert refusal(_partial(settings={**WANTED, "complete": False, "resumed": [{}]}), WANTED, ids, FP, GIT) is None
    other_cpu = refusal(_partial(), WANTED, ids, {**FP, "cpu_model": "Other CPU"}, GIT)
    assert other_cpu is not None and "another runner" in other_cpu and "Other CPU" in other_cpu
    other_python = refusal(_partial(), WANTED, ids, {**FP, "python": "3.12.1"}, GIT)
    assert other_python is not None and "python 3.11.7 -> 3.12.1" in other_python
    other_commit = refusal(_partial(), WANTED, ids, FP, replace(GIT, commit="def456"))
    assert other_commit == "it was measured at another commit (abc123 then, def456 now)"
    rounds = refusal(_partial(), {**WANTED, "rounds": 6}, ids, FP, GIT)
    assert rounds == "it was measured with other settings (rounds: 4 then, 6 now)"
    timing = {**WANTED, "timing": {**WANTED["timing"], "budget_s": 1.0}}
    assert "other settings (timing: " in (refusal(_partial(), timing, ids, FP, GIT) or "")
    changed = refusal(_partial(), {**WANTED, "workloads": "sha256:x"}, ids, FP, GIT)
    assert changed == "it was measured with the workload files changed since (their content hash differs)"


def test_refusal_of_another_set_of_cases(tmp_path: Path, worker: list[tuple[int, list[str]]]) -> None:
    r = _runner(tmp_path)
    r.start(SPECS)
    r.run_round(0)
    partial = load_results(tmp_path / "results.json")
    ids = [s.id for s in SPECS]
    assert refusal(partial, WANTED, ids[::-1], FP, GIT) is None  # the same cases, named in another order
    fewer = refusal(partial, WANTED, ids[:2], FP, GIT)
    assert fewer == "it holds another set of cases (0 new, 1 gone, e.g. w.add[n=3]@cpu)"
    with pytest.raises(UsageError) as info:
        check_resumable(tmp_path / "results.json", partial, WANTED, [*ids, "w.add[n=4]@cpu"], FP, GIT)
    assert info.value.exit_code == 2 and "\n" not in info.value.message and info.value.hint in (None, "")
    assert "1 new, 0 gone, e.g. w.add[n=4]@cpu" in info.value.message


def test_workloads_digest_follows_content_not_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a").mkdir()
    src = tmp_path / "a" / "tiny.py"
    src.write_text("x = 1\n")
    digest = workloads_digest([str(src), str(src)])
    monkeypatch.chdir(tmp_path)
    assert workloads_digest(["a/tiny.py"]) == digest  # a relative path to the same file
    shutil.copy(src, tmp_path / "tiny.py")
    assert workloads_digest(["tiny.py"]) == digest  # the same content elsewhere
    src.write_text("x = 2\n")
    assert workloads_digest([str(src)]) != digest
    builtin = workloads_digest(["module:perfci.workloads.builtin.default"])
    assert builtin.startswith("sha256:") and builtin != digest
