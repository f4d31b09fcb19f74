"""Blocks of lockstep pairs whose workers start together: how many (engine/lockstep.pairs_at_once) and how an
A/B's looks are cut into blocks, with the next block's workers started ahead (ab/pairs.PairedRunner)."""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from perfci.ab import pairs
from perfci.engine.lockstep import CPUS_PER_PAIR, pairs_at_once
from tests.fakes import LockstepRunner

GiB = 2**30


def test_one_pair_per_four_cpus_when_memory_is_unknown() -> None:
    assert [pairs_at_once(0, cpus, None, None, None, None) for cpus in (1, 2, 4, 8, 16, 64)] == [1, 1, 1, 2, 4, 16]
    assert CPUS_PER_PAIR == 4


def test_memory_bounds_the_block() -> None:
    # 16 CPUs allow 4 pairs; half of 8 GiB free holds two 1-GiB workers (one pair), of 40 GiB ten (five pairs)
    assert pairs_at_once(0, 16, 8 * GiB, 1 * GiB, None, None) == 2
    assert pairs_at_once(0, 16, 40 * GiB, 1 * GiB, None, None) == 4
    # the GPU: half of 80 GiB holds twelve 3-GiB workers (six pairs); of 24 GiB four (two pairs)
    assert pairs_at_once(0, 16, 400 * GiB, GiB, 80 * GiB, 3 * GiB) == 4
    assert pairs_at_once(0, 16, 400 * GiB, GiB, 24 * GiB, 3 * GiB) == 2
    assert pairs_at_once(0, 16, 1 * GiB, 4 * GiB, None, None) == 1  # never less than one pair


def test_a_requested_size_is_taken_as_given() -> None:
    assert pairs_at_once(3, 2, 1 * GiB, 4 * GiB, None, None) == 3


@dataclass
class FakeRunner:
    """What PairedRunner asks of a runner: whether the first pair is in, a worker's footprint, spares."""

    rounds: bool = False
    spares: list[int] = field(default_factory=list)
    host_bytes: int = 1 * GiB

    def has_rounds(self) -> bool:
        return self.rounds

    def worker_footprint(self) -> tuple[int | None, int | None, int | None]:
        return self.host_bytes, None, None

    def prestart(self, index: int, tag: str) -> None:
        self.spares.append(index)


def _paired(monkeypatch: pytest.MonkeyPatch, at_once: int, cpus: int = 16, worker: int = GiB) -> tuple[Any, list[Any]]:
    monkeypatch.setattr(pairs.os, "sched_getaffinity", lambda _pid: set(range(cpus)))
    monkeypatch.setattr(pairs.psutil, "virtual_memory", lambda: type("VM", (), {"available": 64 * GiB})())
    base, head = FakeRunner(host_bytes=worker), FakeRunner(host_bytes=worker)
    blocks: list[Any] = []

    def fake_block(b: FakeRunner, h: FakeRunner, indexes: list[int], only: Any, rng: Any, phases: Any, clock: Any,
                   prestart: functools.partial[None] | None) -> None:  # fmt: skip
        blocks.append((indexes, None if prestart is None else prestart.args))
        if prestart is not None:
            prestart()
        b.rounds = h.rounds = True  # the block's results are in

    monkeypatch.setattr(pairs, "run_lockstep_block", fake_block)
    paired = pairs.PairedRunner(base, head, random.Random(0), at_once=at_once, extra=6)  # type: ignore[arg-type]
    return paired, blocks


def test_the_first_pair_runs_alone_then_blocks_with_spares_started_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    paired, blocks = _paired(monkeypatch, at_once=0)  # automatic: 16 CPUs -> 4 pairs, memory allows more
    paired.pairs(4, None)
    # pair 0 alone; it starts pairs 1-3's workers; the block of 1-3 starts 4 speculative spares for a next look
    assert blocks == [([0], (1, 3)), ([1, 2, 3], (4, 4))]
    paired.pairs(6, ["x"], last_look=True)
    assert blocks[2:] == [([4, 5, 6, 7], (8, 2)), ([8, 9], None)]  # the last block of the last look starts none
    assert paired.blocks == [1, 3, 4, 2] and paired.next_index == 10
    assert paired.base.spares == paired.head.spares == [1, 2, 3, 4, 5, 6, 7, 8, 9]


def test_one_pair_at_a_time_on_a_small_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    paired, blocks = _paired(monkeypatch, at_once=0, cpus=2)
    paired.pairs(3, None, last_look=True)
    assert blocks == [([0], (1, 1)), ([1], (2, 1)), ([2], None)]


def test_large_workers_keep_blocks_small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers of 20 GiB with 64 GiB free: half of it holds one pair. The first pair's spares were started by the
    CPUs alone (its size was not known yet); the later pairs adopt them one block at a time."""
    paired, blocks = _paired(monkeypatch, at_once=0, worker=20 * GiB)
    paired.pairs(4, None, last_look=True)
    assert blocks == [([0], (1, 3)), ([1], (2, 1)), ([2], (3, 1)), ([3], None)]


def test_past_the_deadline_no_further_block_starts_once_two_pairs_are_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ab --budget` bounds the first look too (a 10 s budget took 31 s): past the deadline a look stops starting
    blocks, once the A/B holds the two pairs an interval needs; short of them, only the missing pairs run."""
    paired, blocks = _paired(monkeypatch, at_once=0)  # 16 CPUs: blocks of 4 after the first pair
    now = [0.0]
    paired.clock = lambda: now[0]

    def timed_block(*args: Any) -> None:
        now[0] += 10.0  # every block takes 10 s
        record(*args)

    record = pairs.run_lockstep_block
    monkeypatch.setattr(pairs, "run_lockstep_block", timed_block)
    assert paired.pairs(8, None, deadline=5.0) == 2  # pair 0 (past 5 s), then pair 1 alone: two pairs
    assert [b[0] for b in blocks] == [[0], [1]] and now[0] == 20.0
    assert paired.pairs(6, None, deadline=5.0) == 0  # a later look past the deadline runs none
    assert paired.pairs(4, None, deadline=100.0) == 4 and paired.next_index == 6  # before it, as asked
    assert paired.pairs(4, None) == 4  # no deadline: every pair
    assert blocks[1][1] is None  # the block that made up the second pair past the deadline started no spares


def test_the_deadline_passing_while_a_block_is_sized_runs_that_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """The clock is read once a block: read twice, a deadline passing between the reads cut a block to
    MIN_PAIRS - next_index pairs, a negative count (found in review: `pairs` returned -2, blocks [1, 3, -2])."""
    paired, blocks = _paired(monkeypatch, at_once=0)
    paired.pairs(4, None)  # pairs 0-3, no deadline
    readings = iter([99.0, 101.0, 200.0, 300.0])
    paired.clock = lambda: next(readings)
    assert paired.pairs(6, None, deadline=100.0) == 4  # the block sized at 99 runs; at 101 none starts
    assert paired.blocks == [1, 3, 4] and paired.next_index == 8 and all(len(b[0]) > 0 for b in blocks)


def test_a_workers_footprint_comes_from_its_rounds_and_the_fingerprint(tmp_path: Any) -> None:
    """Host: the largest peak resident set of a round; GPU: NVML's figure for the process where a round has it,
    else torch's peak allocation; the GPU's memory from the runner's fingerprint."""
    from perfci.engine.runner import Runner, RunSettings, _CaseState
    from perfci.format.model import CaseSpec, Round

    def rnd(rss: int, device: int, telemetry: dict[str, Any]) -> Round:
        return Round(0, 1, 1, (0.001,), 0.0, "lockstep", 1, peak_rss_bytes=rss, peak_device_bytes=device,
                     telemetry=telemetry)  # fmt: skip

    runner = Runner(RunSettings(peaks_cache=None), tmp_path)
    assert not runner.has_rounds() and runner.worker_footprint() == (None, None, None)
    spec = CaseSpec(workload="m.a", params={}, device="cuda")
    runner.states = {spec.id: _CaseState(spec, [rnd(3 * GiB, 1 * GiB, {}), rnd(2 * GiB, GiB, {})])}
    runner._header = ("2026-12-05T00:00:00Z", {"gpus": [{"memory_total_bytes": 80 * GiB}]}, None)
    assert runner.has_rounds() and runner.worker_footprint() == (3 * GiB, 1 * GiB, 80 * GiB)
    runner.states[spec.id].rounds.append(rnd(GiB, GiB, {"nvml_process_bytes": 2 * GiB}))
    assert runner.worker_footprint() == (3 * GiB, 2 * GiB, 80 * GiB)


class LoggedWorker:
    """A lockstep worker that answers at once and writes every command it gets to a shared log."""

    def __init__(self, name: str, cases: list[str], log: list[tuple[str, str]]) -> None:
        self.name, self.cases, self.log, self.asked = name, cases, log, ""
        self.on_event: Any = lambda event: None

    def send(self, message: Any) -> None:
        self.asked = getattr(message, "case", "")
        self.log.append((self.name, type(message).__name__))

    def wait_for(self, kind: type, timeout_s: float, per_step: bool = False) -> Any:
        from perfci.engine.protocol import Prepared, Sampled

        if kind is Prepared:
            self.log.append((self.name, "Prepared"))
            return Prepared(tuple(self.cases), dict.fromkeys(self.cases, 1))
        if kind is Sampled:
            return Sampled(self.asked, 0.05)
        self.log.append((self.name, kind.__name__))  # Released or Done
        return kind()

    pid = 0

    def kill(self) -> None:
        self.log.append((self.name, "kill"))

    def close(self) -> None:
        pass


def test_a_gpu_block_sets_up_together_then_each_pair_samples_and_finishes_alone() -> None:
    """The CPU twin of a CUDA block (fake workers): every worker is prepared before any sample; then one pair at a
    time samples and finishes, its two sides finishing one after the other, so no two pairs' calls or profiled
    slices share the GPU."""
    from perfci.engine import lockstep
    from perfci.format.model import CaseSpec

    specs = [CaseSpec(workload="m.a", params={}, device="cuda")]
    log: list[tuple[str, str]] = []

    runners = [
        LockstepRunner(specs, lambda cases, i, tag: LoggedWorker(f"{i}{tag}", cases, log), gpu=True) for _ in "AB"
    ]
    ahead = lambda: log.append(("next", "prestart"))  # noqa: E731
    lockstep.run_lockstep_block(*runners, [1, 2, 3], None, random.Random(0), prestart=ahead)  # type: ignore[arg-type]
    # CUDA cases: the next pairs' spares start as soon as the block is set up, before its first sample
    assert log.count(("next", "prestart")) == 1 and log.index(("next", "prestart")) < log.index(("1A", "Sample"))
    prepared = [i for i, (_, what) in enumerate(log) if what == "Prepared"]
    first_sample = next(i for i, (_, what) in enumerate(log) if what == "Sample")
    assert len(prepared) == 6 and max(prepared) < first_sample  # the whole block set up before any sample
    pairs_in_order = [name[0] for name, what in log[first_sample:] if what in ("Sample", "Finish")]
    assert pairs_in_order == sorted(pairs_in_order)  # pair 1's samples and finish, then pair 2's, then pair 3's
    gpu_ends = [(name, what) for name, what in log if what in ("Finish", "Released")]
    assert [name[0] for name, _ in gpu_ends] == list("111122223333")
    for k in range(0, 12, 2):  # each side is told to finish and releases the GPU before the other side is told
        assert gpu_ends[k][1] == "Finish" and gpu_ends[k + 1] == (gpu_ends[k][0], "Released")
    # a pair's results are collected after the next pair's GPU work (its reading overlaps that), the last at once
    released = {p: max(i for i, (name, what) in enumerate(log) if name[0] == p and what == "Released") for p in "123"}
    done = {p: [i for i, (name, what) in enumerate(log) if name[0] == p and what == "Done"] for p in "123"}
    samples = {p: min(i for i, (name, what) in enumerate(log) if name[0] == p and what == "Sample") for p in "123"}
    assert all(len(d) == 2 for d in done.values())
    assert released["2"] < min(done["1"]) and max(done["1"]) < samples["3"]
    assert released["3"] < min(done["2"]) and released["3"] < min(done["3"])
    kills = [i for i, (_, what) in enumerate(log) if what == "kill"]  # every worker stopped when the block ends
    assert len(kills) == 6 and min(kills) > max(max(d) for d in done.values())


class RecordingRunner(LockstepRunner):
    """A fake GPU runner that records the errors and ordinary rounds a lost worker's pair falls back to."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.errors: list[tuple[str, int]] = []
        self.rounds: list[tuple[int, list[str]]] = []

    def record_error(self, case: str, kind: str, reason: str, index: int, done: list[str]) -> None:
        self.errors.append((case, index))

    def run_round(self, index: int, ids: list[str]) -> None:
        self.rounds.append((index, ids))


class LostInReading(LoggedWorker):
    """Pair 1's base worker dies after it released the GPU, while its results were still being read."""

    def wait_for(self, kind: type, timeout_s: float, per_step: bool = False) -> Any:
        from perfci.engine.protocol import Done
        from perfci.engine.supervisor import WorkerLost

        if kind is Done:
            raise WorkerLost("killed by signal 9 (SIGKILL)", "crash", None, self)
        return super().wait_for(kind, timeout_s, per_step)


def test_a_gpu_pair_lost_while_its_results_are_read_costs_only_that_pair() -> None:
    """A pair's results are collected after the next pair's GPU work (engine/lockstep.run_lockstep_block): a worker
    lost then (no case in flight) has its pair's cases measured in ordinary rounds on each side, and the other
    pairs of the block finish in lockstep as usual."""
    from perfci.engine import lockstep
    from perfci.format.model import CaseSpec

    specs = [CaseSpec(workload="m.a", params={}, device="cuda")]
    log: list[tuple[str, str]] = []

    def worker(cases: list[str], index: int, tag: str) -> LoggedWorker:
        kind = LostInReading if (index, tag) == (1, "A") else LoggedWorker
        return kind(f"{index}{tag}", cases, log)

    base, head = (RecordingRunner(specs, worker, gpu=True) for _ in "AB")
    lockstep.run_lockstep_block(base, head, [1, 2, 3], None, random.Random(0))  # type: ignore[arg-type]
    assert base.errors == [] and head.errors == []  # nothing was in flight: no case is blamed
    assert base.rounds == [(1, [specs[0].id])] and head.rounds == [(1, [specs[0].id])]
    for p in "23":  # the other pairs sampled, released and reported in lockstep
        assert (f"{p}A", "Done") in log and (f"{p}B", "Done") in log and (f"{p}A", "Released") in log
    assert [name for name, what in log if what == "kill"].count("1A") == 1  # stopped once, with the block


def test_which_side_starts_first_is_drawn_per_pair() -> None:
    """Each pair's two workers get their jobs (and start their set-ups) in an order drawn from the A/B's seed, so
    a state a process draws by its start order (GPU memory placement, say) cannot lean to one side."""
    from perfci.engine import lockstep
    from perfci.format.model import CaseSpec

    specs = [CaseSpec(workload="m.a", params={}, device="cuda")]
    log: list[tuple[str, str]] = []
    started: list[str] = []

    def make(cases: list[str], i: int, tag: str) -> LoggedWorker:
        started.append(f"{i}{tag}")
        return LoggedWorker(f"{i}{tag}", cases, log)

    runners = [LockstepRunner(specs, make, gpu=True) for _ in "AB"]
    pairs = list(range(1, 13))
    lockstep.run_lockstep_block(*runners, pairs, None, random.Random(5))  # type: ignore[arg-type]
    firsts = [started[k][-1] for k in range(0, len(started), 2)]
    assert [started[k][:-1] for k in range(0, len(started), 2)] == [str(i) for i in pairs]  # pair by pair
    assert 3 <= firsts.count("A") <= 9 and 3 <= firsts.count("B") <= 9  # both orders, about as often
    again: list[str] = []
    runners = [
        LockstepRunner(specs, lambda c, i, t: (again.append(f"{i}{t}"), LoggedWorker(f"{i}{t}", c, []))[1], gpu=True)
        for _ in "AB"
    ]
    lockstep.run_lockstep_block(*runners, pairs, None, random.Random(5))  # type: ignore[arg-type]
    assert again == started  # the same seed, the same order
    # both sides of every pair were still sampled
    sampled = {name for name, what in log if what == "Sample"}
    assert sampled == {f"{i}{t}" for i in pairs for t in "AB"}


def test_an_interrupt_received_stops_the_a_b_before_its_next_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C recorded by the handler whose KeyboardInterrupt was lost (seen once: the A/B ran to its last pair)
    stops the pairs before the next block starts; with none received, the blocks run."""
    from perfci import interrupts

    paired, blocks = _paired(monkeypatch, at_once=0)
    monkeypatch.setattr(interrupts, "_received", [])
    paired.pairs(1, None)
    assert len(blocks) == 1
    interrupts._received.append(2)  # what the handler records (SIGINT) before its raise
    with pytest.raises(KeyboardInterrupt):
        paired.pairs(3, None)
    assert len(blocks) == 1  # no block started after the interrupt
    assert interrupts.interrupted()
