"""Lockstep pairs (perfci/engine/lockstep.py) with real worker processes: results on both sides, and failures
isolated to the case that failed."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from perfci.engine.lockstep import run_lockstep_block
from perfci.engine.runner import Runner, RunSettings
from perfci.workloads.discovery import cases_from_sources

DATA = Path(__file__).parent.parent / "data" / "workloads"
pytestmark = pytest.mark.integration
SERIAL = pytest.mark.serial  # on the tests that assert time-outs of real set-ups: run alone (README)


def _runners(
    tmp_path: Path, workloads: str = "lockstep_cases.py", rounds: int = 2, timeout_s: float = 20
) -> tuple[Runner, Runner]:
    """A base and a head runner, started on the cases of one file of tests/data/workloads."""
    settings = RunSettings(rounds=rounds, case_timeout_s=timeout_s, peaks_cache=None)
    specs = cases_from_sources([str(DATA / workloads)])
    base, head = Runner(settings, tmp_path / "base"), Runner(settings, tmp_path / "head")
    base.start(specs)
    head.start(specs)
    return base, head


def test_lockstep_pairs_measure_both_sides_and_isolate_failures(tmp_path: Path) -> None:
    base, head = _runners(tmp_path)
    rng = random.Random(0)
    phases: dict[str, float] = {}
    ticks = iter(range(1000))
    for i in range(2):
        run_lockstep_block(base, head, [i], None, rng, phases, clock=lambda: float(next(ticks)))
    # pair 0 lost a worker in set-up (its start counts one tick, then ordinary rounds for the rest, on each side:
    # one tick each); pair 1 ran in lockstep: start, sampling and finish, one tick each on the injected clock
    assert phases == {"rounds": 2.0, "start": 2.0, "sampling": 1.0, "finish": 1.0}
    for runner in (base, head):
        run = runner.finish()
        by_name = {c.spec.workload.split(".", 1)[1]: c for c in run.cases}
        healthy = by_name["healthy"]
        assert healthy.status.value == "ok" and len(healthy.rounds) == 2
        assert all(len(r.samples) >= 5 for r in healthy.rounds)
        # pair 0 lost a worker to the crash in set-up: its other cases fell back to ordinary rounds;
        # pair 1 (the crashing case excluded from then on) ran in lockstep
        first, second = sorted(healthy.rounds, key=lambda r: r.index)
        assert first.stop_reason in ("budget", "noise_target") and second.stop_reason == "lockstep"
        assert len({r.pid for r in healthy.rounds}) == 2
        assert by_name["crashes"].errors[0].kind == "crash"
        assert "SIGSEGV" in by_name["crashes"].errors[0].message
        late = by_name["fails_late"]
        assert late.status.value == "error" and "late failure" in late.errors[0].message
    pids = {r.pid for r in base.finish().cases[0].rounds} | {r.pid for r in head.finish().cases[0].rounds}
    assert len(pids) >= 4  # base and head never share a worker


def test_both_workers_share_their_cpus(tmp_path: Path) -> None:
    base, head = _runners(tmp_path)
    assert base.lockstep_cpus() == head.lockstep_cpus()
    assert len(base.lockstep_cpus()) == 1  # threads=1 by default


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to tell start-up from sampling")
def test_lockstep_workers_start_on_any_cpu_and_sample_on_the_shared_ones(tmp_path: Path) -> None:
    """Both workers of a pair start at once: set-up may use every CPU; sampling runs on the pair's shared CPUs."""
    base, head = _runners(tmp_path, "affinity_cases.py", rounds=1, timeout_s=20)
    run_lockstep_block(base, head, [0], None, random.Random(0))
    allowed = sorted(os.sched_getaffinity(0))
    for runner in (base, head):
        (case,) = runner.finish().cases
        (rnd,) = case.rounds
        notes = rnd.telemetry["notes"]
        assert rnd.stop_reason == "lockstep"
        assert notes["setup_cpus"] == allowed
        assert notes["call_cpus"] == list(base.lockstep_cpus()) == allowed[-1:]


def test_a_pair_uses_workers_started_ahead_and_replaces_a_dead_one(tmp_path: Path) -> None:
    """`prestart` starts the next pair's processes while a pair finishes; the pair adopts them (one fewer process
    start each), a spare that died in the meantime is replaced by a fresh worker, and spares no pair used are
    stopped."""
    base, head = _runners(tmp_path)
    rng = random.Random(0)
    prestarted: list[int] = []

    def prestart(index: int) -> None:
        prestarted.append(index)
        base.prestart(index, "A")
        head.prestart(index, "B")

    run_lockstep_block(base, head, [0], None, rng, prestart=lambda: prestart(1))  # loses a worker in set-up
    prestart(1)  # pair 0 ended before its sampling: start pair 1's workers here
    dead = head._spares[(1, "B")]
    dead.kill()
    dead.wait()
    run_lockstep_block(base, head, [1], None, rng, prestart=lambda: prestart(2))
    assert prestarted == [1, 2]  # pair 1 sampled, then started pair 2's workers
    assert (base.started_ahead, head.started_ahead) == (1, 0)  # the dead spare was not adopted ...
    healthy = {c.spec.workload.split(".", 1)[1]: c for c in head.finish().cases}["healthy"]
    assert any(r.stop_reason == "lockstep" for r in healthy.rounds)  # ... and its pair measured all the same
    spares = [base._spares[(2, "A")], head._spares[(2, "B")]]
    base.discard_spares()
    head.discard_spares()
    assert all(p.poll() is not None for p in spares) and not base._spares and not head._spares


def test_spares_import_what_the_first_pair_set_ups_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first pair's workers report the library modules their set-ups imported; a spare started for a later
    pair imports them while it waits for its job (perfci/engine/preload.py). GPU runs only do this; the runner is
    told it has a GPU case here, and the spare's set-up sees `colorsys` already imported."""
    base, head = _runners(tmp_path, "preload_cases.py", rounds=2, timeout_s=20)
    for runner in (base, head):
        monkeypatch.setattr(runner, "uses_gpu", lambda: True)
    rng = random.Random(0)

    def ahead() -> None:
        base.prestart(1, "A")
        head.prestart(1, "B")

    run_lockstep_block(base, head, [0], None, rng, prestart=ahead)
    assert "colorsys" in base.learned and "colorsys" in head.learned
    assert not any(m.startswith("perfci") for m in base.learned)
    run_lockstep_block(base, head, [1], None, rng)
    assert (base.started_ahead, head.started_ahead) == (1, 1)
    for runner in (base, head):
        (case,) = runner.finish().cases
        before = {r.index: r.telemetry["notes"]["colorsys_before_setup"] for r in case.rounds}
        assert before == {0: False, 1: True}
        # each worker's own start: its imports (torch, for a GPU run), then the wait for its job
        starts = [r.telemetry["worker_phases_s"] for r in case.rounds]
        assert all(p["preload"] > 0.01 and p["waited_for_job"] >= 0 for p in starts), starts
        listed = (runner.out_dir / "logs" / "preload.txt").read_text().split()
        assert listed[0] == "torch" and "colorsys" in listed


def test_a_block_of_pairs_sets_up_together_and_measures_each_pair_in_lockstep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three pairs started as one block: all six workers set up at the same time (the workload's set-up passes
    only when six processes set it up at once), then each pair is sampled in lockstep, in its own processes."""
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    monkeypatch.setenv("PERFCI_TEST_BARRIER", str(barrier))
    monkeypatch.setenv("PERFCI_TEST_BARRIER_N", "6")
    base, head = _runners(tmp_path, "barrier_cases.py", rounds=3, timeout_s=90)
    phases: dict[str, float] = {}
    ticks = iter(range(1000))
    run_lockstep_block(base, head, [0, 1, 2], None, random.Random(0), phases, clock=lambda: float(next(ticks)))
    assert phases == {"start": 1.0, "sampling": 3.0, "finish": 3.0}  # one start for the block; each pair its own
    pids: set[int] = set()
    for runner in (base, head):
        (case,) = runner.finish().cases
        assert not case.errors, case.errors
        assert sorted(r.index for r in case.rounds) == [0, 1, 2]
        assert {r.stop_reason for r in case.rounds} == {"lockstep"}
        assert all(r.telemetry["notes"]["setting_up_together"] == 6 for r in case.rounds)
        pids |= {r.pid for r in case.rounds}
    assert len(pids) == 6 and len(list(barrier.iterdir())) == 6


def test_a_worker_lost_in_a_block_costs_only_its_own_pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A block of two pairs in which one worker crashes in set-up: its pair falls back to ordinary rounds (the
    crash recorded on its side), the other pair is measured in lockstep, and every worker of the block stops."""
    monkeypatch.setenv("PERFCI_TEST_CRASH_ONCE", str(tmp_path / "crashed"))
    base, head = _runners(tmp_path, "crash_once_cases.py", rounds=2, timeout_s=30)
    run_lockstep_block(base, head, [0, 1], None, random.Random(0))
    healthy_rounds = []
    errors = []
    for runner in (base, head):
        by_name = {c.spec.workload.split(".", 1)[1]: c for c in runner.finish().cases}
        healthy_rounds += by_name["healthy"].rounds
        errors += by_name["crashes_once"].errors
    assert [e.kind for e in errors] == ["crash"] and "SIGSEGV" in errors[0].message
    lost = errors[0].round_index
    by_pair = {i: {r.stop_reason for r in healthy_rounds if r.index == i} for i in (0, 1)}
    assert by_pair[1 - lost] == {"lockstep"}  # the other pair: lockstep on both sides
    assert "lockstep" not in by_pair[lost] and len([r for r in healthy_rounds if r.index == lost]) == 2


@SERIAL
def test_a_set_up_that_hangs_in_a_block_is_stopped_after_the_case_time_out(tmp_path: Path) -> None:
    """Each case's set-up gets the case time-out (2 s here), as in ordinary rounds; before, a lockstep set-up was
    given every case's time-out plus 120 s. The hanging case is a `timeout` error on each side; the other case is
    measured in every pair."""
    base, head = _runners(tmp_path, "hang_cases.py", rounds=2, timeout_s=2)
    run_lockstep_block(base, head, [0, 1], None, random.Random(0))
    for runner in (base, head):
        by_name = {c.spec.workload.split(".", 1)[1]: c for c in runner.finish().cases}
        errors = by_name["hangs"].errors  # one a pair: both pairs of the block set up at once
        assert errors and all(e.kind == "timeout" and "timed out after 2 s" in e.message for e in errors), errors
        assert sorted(r.index for r in by_name["healthy"].rounds) == [0, 1]


def test_a_worker_releases_the_gpu_before_its_results_and_stays_until_closed(tmp_path: Path) -> None:
    """A lockstep worker's finish (engine/worker._finish_all): every case's GPU part, then `Released`, then the
    results and `Done`; it then waits for the end of its stdin, so that its exit (for a CUDA worker, the context's
    teardown) happens when the driver closes the block, not while another pair is measured."""
    import subprocess

    from perfci.engine.protocol import Done, Finish, Prepared, Released, Sample, Sampled

    base, _ = _runners(tmp_path, "affinity_cases.py", rounds=1)
    todo = base.todo(0)
    worker = base.lockstep_worker(todo, 0, [], "A")
    seen: list[str] = []
    record = worker.on_event
    worker.on_event = lambda event: (seen.append(type(event).__name__), record(event))[1]
    try:
        worker.wait_for(Prepared, 60, True)
        worker.send(Sample(todo[0].id, n=5, rewarm=0, iterations=1))
        worker.wait_for(Sampled, 20)
        worker.send(Finish())
        worker.wait_for(Released, 20)
        assert "Result" not in seen
        worker.wait_for(Done, 20)
        assert seen.index("Released") < seen.index("Result") < seen.index("Done")
        with pytest.raises(subprocess.TimeoutExpired):
            worker.proc.wait(timeout=0.5)  # still there after Done
    finally:
        worker.close()
    assert worker.proc.returncode is not None
    (case,) = base.finish().cases
    assert case.rounds and case.rounds[0].stop_reason == "lockstep"


ONE_SIDED = """
import os

import perfci

FAST = {"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.05, "min_sample_s": 0.0005}
HEAD = os.environ.get("PERFCI_TEST_SIDE") == "head"


@perfci.workload(timing=FAST)
def set_up_fails_on_head(ctx):
    if HEAD:
        raise RuntimeError("broken at head")
    data = list(range(300))
    return lambda: sum(data)


@perfci.workload(timing=FAST)
def first_call_fails_on_head(ctx):
    data = list(range(300))

    def call():
        if HEAD:
            raise RuntimeError("first call broken at head")
        return sum(data)

    return call
"""


def test_a_case_that_fails_on_one_side_is_still_measured_on_the_other(tmp_path: Path) -> None:
    """The healthy side of a pair whose other side failed in set-up, or at its first sample, measures the case
    alone: a result, not a protocol error for a round with no samples (seen with a pytest test broken at head)."""
    wl = tmp_path / "one_sided.py"
    wl.write_text(ONE_SIDED)
    settings = RunSettings(rounds=1, case_timeout_s=20, peaks_cache=None)
    specs = cases_from_sources([str(wl)])
    base = Runner(settings, tmp_path / "base", None, {**os.environ, "PERFCI_TEST_SIDE": "base"})
    head = Runner(settings, tmp_path / "head", None, {**os.environ, "PERFCI_TEST_SIDE": "head"})
    base.start(specs)
    head.start(specs)
    for seed in range(2):  # who samples first in a step is drawn: both orders of the first sample
        run_lockstep_block(base, head, [seed], None, random.Random(seed))
    healthy = {c.spec.workload.split(".", 1)[1]: c for c in base.finish().cases}
    for name in ("set_up_fails_on_head", "first_call_fails_on_head"):
        assert healthy[name].status.value == "ok", healthy[name].errors
        assert len(healthy[name].rounds) == 2 and all(r.samples for r in healthy[name].rounds)
    broken = {c.spec.workload.split(".", 1)[1]: c for c in head.finish().cases}
    assert "broken at head" in broken["set_up_fails_on_head"].errors[0].message
    assert "first call broken at head" in broken["first_call_fails_on_head"].errors[0].message
