"""Lockstep A/B pairs: one worker per revision, both set up side by side, then sampled alternately.

Why: on a shared 2-core VM the speed of the machine wanders by 10-30% over seconds. Two processes measured
one after the other (the classic paired round) see different machine states, and their ratio wanders almost
as much (measured: per-pair sd of log(median_B/median_A) 0.17-0.25 for the default suite). Alternating the
two revisions *sample by sample* makes them share the machine state: in one process, alternating two identical
matmuls call by call gave a ratio sd of 0.8% per 0.6 s window, against 2.1-2.4% for blocks of 10-50 calls
(benchmarks in docs/compare.md). So a pair here is: start both workers, let both set up every case, then for
each step visit the cases in a shuffled order and, per case, ask one worker then the other (coin flip) for
one sample, until each side has spent its sampling budget and has `min_samples`. The round medians of a pair
then differ by the code, not by the minute they ran in. Both sides time the same number of calls per sample: the
larger of their calibrated counts (`agreed_iterations`).

Failures: a case that raises on one side is dropped from the pair (its error is recorded on that side; the other
side's worker samples the case alone at its finish if the pair never did, engine/worker.run_lockstep); a
worker that crashes, hangs or exceeds its memory limit is killed with its partner, the case in flight gets the
error, and the pair's remaining cases are measured by ordinary rounds on each side, so nothing is lost.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from perfci.engine.protocol import Done, Event, Finish, Prepared, Released, Sample, Sampled
from perfci.engine.runner import Runner
from perfci.engine.supervisor import WorkerLost, WorkerProcess
from perfci.format.model import CaseSpec
from perfci.profilers.device_time import MIN_STEADY_SAMPLES, STEADY_SAMPLE_SHARE

# Untimed calls before each lockstep sample: the partner ran in between and evicted this case's data from the
# caches; without them every sample pays the refill once, which dilutes the ratio of a slower revision towards
# 1 (measured before this: injected 3%/5%/10% slowdowns estimated at +2.73%/+4.70%/+9.58%).
REWARM_CALLS = 1


# Pairs started together (`pairs_at_once`, automatic): a worker's start (interpreter, imports, CUDA context, the
# cases' set-up, first call, calibration) is mostly one CPU's work for a few seconds, and a pair's two workers
# already start side by side; four CPUs a pair leaves room for the imports' and set-ups' own threads. Memory: the
# block's workers all hold their cases at once, so together they may take this share of what is free.
CPUS_PER_PAIR = 4
MEMORY_SHARE = 0.5


def pairs_at_once(
    requested: int,
    cpus: int,
    host_free: int | None,
    host_per_worker: int | None,
    device_total: int | None,
    device_per_worker: int | None,
) -> int:
    """How many lockstep pairs start and set up together: `requested` when given (> 0); else one pair per
    CPUS_PER_PAIR CPUs, as many as MEMORY_SHARE of the free host memory and of the GPU's memory hold at the
    measured size of a worker (two a pair), at least 1."""
    if requested > 0:
        return requested
    n = max(1, cpus // CPUS_PER_PAIR)
    for room, per_worker in ((host_free, host_per_worker), (device_total, device_per_worker)):
        if room and per_worker:
            n = min(n, int(MEMORY_SHARE * room // (2 * per_worker)))
    return max(1, n)


def agreed_iterations(a: Prepared, b: Prepared) -> dict[str, int]:
    """Calls per sample for each case both sides prepared: the larger of the two sides' calibrated counts, so
    both revisions of a pair time blocks of the same length in calls (docs/measurement.md)."""
    common = set(a.cases) & set(b.cases)
    return {c: max(int(a.iterations.get(c, 0)), int(b.iterations.get(c, 0))) for c in common}


def _sample(worker: WorkerProcess, case_id: str, timeout_s: float, iterations: int) -> tuple[float, bool]:
    worker.send(Sample(case_id, n=1, rewarm=REWARM_CALLS, iterations=iterations))
    event = worker.wait_for(Sampled, timeout_s)
    return event.elapsed_s, event.failed or event.missing


def finish_pair(
    workers: list[WorkerProcess],
    one_at_a_time: bool,
    rng: random.Random,
    timeout_s: float,
    released: Callable[[WorkerProcess], None] | None = None,
) -> None:
    """Both workers' last step (`Finish`: the device clock's profiled slice, the energy block, memory, the
    results). CPU cases finish side by side, results included. With CUDA cases the two sides take the GPU one
    after the other, in an order drawn per pair: finishing together, one side's profiled calls shared the GPU
    with the other's slice or energy block, their kernels took turns, and the device clock read slow (on the
    H200, BERT-base rounds +10..+45% in `perfci ab` where the same slice alone read within 1%; docs/gpu.md).
    The second side starts once the first has `Released` the GPU, and their results, read on the host only,
    are collected later (`collect`), while the next pair samples; `released` is called with each worker as it
    releases the GPU (the runner moves it off the pairs' CPUs)."""
    if one_at_a_time:
        order = list(workers)
        rng.shuffle(order)
        for worker in order:
            worker.send(Finish())
            worker.wait_for(Released, timeout_s)
            if released is not None:
                released(worker)
        return
    for worker in workers:
        worker.send(Finish())
    collect(workers, timeout_s)


def collect(workers: list[WorkerProcess], timeout_s: float) -> None:
    """Wait for each worker's results (`Done`)."""
    for worker in workers:
        worker.wait_for(Done, timeout_s)


def run_lockstep_block(
    base: Runner,
    head: Runner,
    indexes: list[int],
    only: list[str] | None,
    rng: random.Random,
    phases: dict[str, float] | None = None,
    clock: Callable[[], float] = time.monotonic,
    prestart: Callable[[], None] | None = None,
) -> None:
    """Pairs `indexes` of an A/B whose workers start and set up together, then are sampled and finished pair
    after pair (`pairs_at_once`). Cases present on both sides run in lockstep, the others in ordinary rounds.
    Where the time went is added to `phases` (seconds): `start` (every worker of the block started, set up and
    calibrated), `sampling` (the alternating samples), `finish` (profiled slices, energy blocks, results),
    `rounds` (cases on one side only, and a lost worker's remaining cases). With CUDA cases a pair's results are
    collected after the next pair's GPU work (its workers read their slices meanwhile, on the host), and the
    block's workers are stopped together when it ends. `prestart` starts the next pairs' worker
    processes (`Runner.prestart`): once the block's last sampling is over (before its energy blocks and results),
    or for CUDA cases as soon as the block is set up. A worker lost in set-up or sampling costs only its own
    pair: that pair's remaining cases are measured in ordinary rounds on each side."""
    spent = phases if phases is not None else {}
    block: list[_Pair] = []
    for index in indexes:
        todo_a, todo_b = base.todo(index, only), head.todo(index, only)
        ids_b = {s.id for s in todo_b}
        common = [s.id for s in todo_a if s.id in ids_b]
        for runner, todo in ((base, todo_a), (head, todo_b)):
            alone = [s.id for s in todo if s.id not in common]
            if alone:
                t0 = clock()
                runner.run_round(index, alone)
                _add(spent, "rounds", clock() - t0)
        if common:
            pick_a, pick_b = [s for s in todo_a if s.id in common], [s for s in todo_b if s.id in common]
            block.append(_Pair(index, pick_a, pick_b))
    if not block:
        return  # each side's ordinary rounds wrote their results
    gpu = base.uses_gpu() or head.uses_gpu()
    try:
        t0 = clock()
        _set_up(base, head, block, rng)
        _add(spent, "start", clock() - t0)
        if prestart is not None and gpu:
            # CUDA cases: the next pairs' processes import (8-9 s each for 8 spares on an H100 runner) while this
            # whole block samples and finishes, off the pairs' CPUs (`Runner.prestart`); they take no GPU time,
            # and device time, on which such a case is decided, does not wait for the host
            prestart()
            prestart = None
        reading: _Pair | None = None  # CUDA: a pair whose GPU work is over, its results still being read
        for k, pair in enumerate(block):
            if pair.lost is None:
                ahead = prestart if k == len(block) - 1 else None
                _sample_and_finish(base, head, pair, rng, spent, clock, ahead)
            if reading is not None:
                _complete(base, head, reading, spent, clock, gpu)
                reading = None
            if gpu and pair.lost is None:
                reading = pair  # collected after the next pair's GPU work: its reading overlaps that
            else:
                _complete(base, head, pair, spent, clock, gpu)
        if reading is not None:
            _complete(base, head, reading, spent, clock, gpu)
    finally:
        _close_all(block)


def _complete(
    base: Runner, head: Runner, pair: _Pair, phases: dict[str, float], clock: Callable[[], float], gpu: bool
) -> None:
    """A pair's results collected (`Done`), or its lost worker's cases recovered; the partial results written.
    A CUDA pair's workers stay until the block ends (`_close_all`): a process's exit tears down its CUDA
    context, which is not to overlap another pair's measurement."""
    if pair.lost is None and pair.finishing:
        t0 = clock()
        try:
            collect(pair.workers, base.settings.case_timeout_s * max(1, len(pair.todo_a)))
        except WorkerLost as lost:
            pair.lost = lost
        _add(phases, "finish", clock() - t0)
    if pair.lost is not None:
        _recover(base, head, pair, phases, clock)
    if not gpu:
        pair.close()
    base.write_partial()
    head.write_partial()


def _close_all(block: list[_Pair]) -> None:
    """Stop every worker of the block, then wait for them: their exits (CUDA contexts torn down) overlap."""
    for pair in block:
        for w in pair.workers:
            w.kill()
    for pair in block:
        pair.close()


@dataclass
class _Pair:
    """One lockstep pair of a block: its cases on each side, its two workers once started, what they prepared,
    and the worker it lost, if any."""

    index: int
    todo_a: list[CaseSpec]
    todo_b: list[CaseSpec]
    done_a: list[str] = field(default_factory=list)
    done_b: list[str] = field(default_factory=list)
    workers: list[WorkerProcess] = field(default_factory=list)
    ready: tuple[Prepared, Prepared] | None = None
    lost: WorkerLost | None = None
    finishing: bool = False  # its GPU work is over (`Released`), its results not collected yet

    def close(self) -> None:
        for w in self.workers:
            w.close()


def _set_up(base: Runner, head: Runner, block: list[_Pair], rng: random.Random) -> None:
    """Start every worker of the block, then wait for all of them to be set up (`Prepared`) at once: each is
    watched by its own thread, so a worker that hangs or outgrows its memory limit in set-up is stopped while
    the others still set up. Their events reach the runners one at a time. A pair whose worker is lost records
    it in `lost`; the others proceed."""
    lock = threading.Lock()
    for pair in block:
        # which side gets its job (and starts its set-up: CUDA context, model, memory) first is drawn per pair, so
        # that a state a process draws by its start order cannot lean to one side; `workers` stays [A, B]
        sides = [(base, pair.todo_a, pair.done_a, "A"), (head, pair.todo_b, pair.done_b, "B")]
        if rng.random() < 0.5:
            sides.reverse()
        started: dict[str, WorkerProcess] = {}
        try:
            for runner, todo, done, tag in sides:
                started[tag] = runner.lockstep_worker(todo, pair.index, done, tag)
        except WorkerLost as lost:
            pair.lost = lost
        pair.workers.extend(started[tag] for tag in "AB" if tag in started)
        for w in pair.workers:
            w.on_event = _one_at_a_time(w.on_event, lock)
    waiting = [(pair, w) for pair in block if pair.lost is None for w in pair.workers]
    pool = ThreadPoolExecutor(max_workers=max(1, len(waiting)), thread_name_prefix="perfci-setup")
    try:
        # the start (imports) within the start-up time-out, then each case's set-up within the case time-out, as in
        # ordinary rounds: a set-up that hangs is stopped after the case time-out, not after all the cases' time-outs
        futures = [pool.submit(w.wait_for, Prepared, w.limits.startup_timeout_s, True) for _, w in waiting]
        outcomes = [(pair, f.exception() or f.result()) for (pair, _), f in zip(waiting, futures, strict=True)]
    except BaseException:  # interrupted: stop every worker, which ends the threads that watch them
        for pair in block:
            pair.close()
        raise
    finally:
        pool.shutdown(wait=True)
    for pair, outcome in outcomes:
        if isinstance(outcome, WorkerLost):
            pair.lost = pair.lost or outcome
        elif isinstance(outcome, BaseException):
            raise outcome
    for pair in block:
        if pair.lost is None:
            ready_a, ready_b = (r for p, r in outcomes if p is pair)
            assert isinstance(ready_a, Prepared) and isinstance(ready_b, Prepared)
            base.learn_imports(ready_a.imported)
            head.learn_imports(ready_b.imported)
            pair.ready = (ready_a, ready_b)


def _one_at_a_time(handler: Callable[[Event], None], lock: threading.Lock) -> Callable[[Event], None]:
    """`handler` called under `lock`: the set-up threads of a block report to the same runners."""

    def locked(event: Event) -> None:
        with lock:
            handler(event)

    return locked


def _sample_and_finish(
    base: Runner,
    head: Runner,
    pair: _Pair,
    rng: random.Random,
    phases: dict[str, float],
    clock: Callable[[], float],
    prestart: Callable[[], None] | None,
) -> None:
    """The pair's alternating samples and its finish; a worker lost on the way is recorded in `pair.lost`."""
    assert pair.ready is not None
    settings = base.settings
    timeout = settings.case_timeout_s
    wa, wb = pair.workers
    agreed = agreed_iterations(*pair.ready)
    try:
        t1 = clock()
        live = [s.id for s in pair.todo_a if s.id in agreed]
        spent = {c: [0.0, 0.0] for c in live}
        counts = dict.fromkeys(live, 0)
        budget, least, most = settings.timing.budget_s, settings.timing.min_samples, settings.timing.max_samples
        share = {c: STEADY_SAMPLE_SHARE if base.steady_clock(c, lockstep=True) else 1.0 for c in live}
        budgets = {c: budget * share[c] for c in live}  # a case decided on its device clock samples less latency
        leasts = {c: max(MIN_STEADY_SAMPLES, round(least * share[c])) if share[c] < 1 else least for c in live}
        while live:
            order = list(live)
            rng.shuffle(order)
            for case_id in order:
                sides = [(0, wa), (1, wb)] if rng.random() < 0.5 else [(1, wb), (0, wa)]
                for side, worker in sides:
                    elapsed, failed = _sample(worker, case_id, timeout, agreed[case_id])
                    spent[case_id][side] += elapsed
                    if failed:
                        live.remove(case_id)
                        break
                else:
                    counts[case_id] += 1
            live = [c for c in live if counts[c] < most and (min(spent[c]) < budgets[c] or counts[c] < leasts[c])]
        t2 = clock()
        _add(phases, "sampling", t2 - t1)
        if prestart is not None:
            prestart()  # the next pairs' processes start while this one finishes: no sample is being taken
        gpu = base.uses_gpu() or head.uses_gpu()
        finish_pair([wa, wb], gpu, rng, timeout * max(1, len(pair.todo_a)), lambda w: base.move_off_pair_cpus(w.pid))
        pair.finishing = gpu
        _add(phases, "finish", clock() - t2)
    except WorkerLost as lost:
        pair.lost = lost


def _recover(base: Runner, head: Runner, pair: _Pair, phases: dict[str, float], clock: Callable[[], float]) -> None:
    """After a lost worker: the case in flight gets the error on its side, both workers stop, and the pair's
    cases not yet finished are measured in ordinary rounds on each side, so nothing is lost."""
    lost = pair.lost
    assert lost is not None
    failed_side = base if pair.workers and lost.worker is pair.workers[0] else head
    if lost.case is not None:
        done = pair.done_a if failed_side is base else pair.done_b
        failed_side.record_error(lost.case, lost.kind, lost.reason, pair.index, done)
    pair.close()
    for runner, todo, done in ((base, pair.todo_a, pair.done_a), (head, pair.todo_b, pair.done_b)):
        rest = [s.id for s in todo if s.id not in done]
        if rest:
            t3 = clock()
            runner.run_round(pair.index, rest)
            _add(phases, "rounds", clock() - t3)


def _add(phases: dict[str, float], name: str, seconds: float) -> None:
    phases[name] = phases.get(name, 0.0) + seconds
