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

Failures: a case that raises on one side is dropped from the pair (its error is recorded on that side); a
worker that crashes, hangs or exceeds its memory limit is killed with its partner, the case in flight gets the
error, and the pair's remaining cases are measured by ordinary rounds on each side, so nothing is lost.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from perfci.engine.protocol import Done, Finish, Prepared, Sample, Sampled
from perfci.engine.runner import Runner
from perfci.engine.supervisor import WorkerLost, WorkerProcess
from perfci.format.model import CaseSpec
from perfci.profilers.device_time import MIN_STEADY_SAMPLES, STEADY_SAMPLE_SHARE

# Untimed calls before each lockstep sample: the partner ran in between and evicted this case's data from the
# caches; without them every sample pays the refill once, which dilutes the ratio of a slower revision towards
# 1 (measured before this: injected 3%/5%/10% slowdowns estimated at +2.73%/+4.70%/+9.58%).
REWARM_CALLS = 1


def agreed_iterations(a: Prepared, b: Prepared) -> dict[str, int]:
    """Calls per sample for each case both sides prepared: the larger of the two sides' calibrated counts, so
    both revisions of a pair time blocks of the same length in calls (docs/measurement.md)."""
    common = set(a.cases) & set(b.cases)
    return {c: max(int(a.iterations.get(c, 0)), int(b.iterations.get(c, 0))) for c in common}


def _sample(worker: WorkerProcess, case_id: str, timeout_s: float, iterations: int) -> tuple[float, bool]:
    worker.send(Sample(case_id, n=1, rewarm=REWARM_CALLS, iterations=iterations))
    event = worker.wait_for(Sampled, timeout_s)
    return event.elapsed_s, event.failed or event.missing


def finish_pair(workers: list[WorkerProcess], one_at_a_time: bool, rng: random.Random, timeout_s: float) -> None:
    """Both workers' last step (`Finish`: the device clock's profiled slice, the energy block, memory, the
    results). CPU cases finish side by side. With CUDA cases the two sides finish one after the other, in an
    order drawn per pair: finishing together, one side's profiled calls shared the GPU with the other's slice or
    energy block, their kernels took turns, and the device clock read slow (on the H200, BERT-base rounds
    +10..+45% in `perfci ab` where the same slice alone read within 1%; docs/gpu.md)."""
    if one_at_a_time:
        order = list(workers)
        rng.shuffle(order)
        for worker in order:
            worker.send(Finish())
            worker.wait_for(Done, timeout_s)
        return
    for worker in workers:
        worker.send(Finish())
    for worker in workers:
        worker.wait_for(Done, timeout_s)


def run_lockstep_pair(
    base: Runner,
    head: Runner,
    index: int,
    only: list[str] | None,
    rng: random.Random,
    phases: dict[str, float] | None = None,
    clock: Callable[[], float] = time.monotonic,
    prestart: Callable[[], None] | None = None,
) -> None:
    """Pair `index` of an A/B: cases present on both sides in lockstep, the others in ordinary rounds. Where the
    pair's time went is added to `phases` (seconds): `start` (both workers started, set up and calibrated),
    `sampling` (the alternating samples), `finish` (energy blocks, results, teardown), `rounds` (cases on one
    side only, and a lost worker's remaining cases). `prestart` is called once sampling is over (before the
    energy blocks and results): it starts the next pair's worker processes (`Runner.prestart`)."""
    spent = phases if phases is not None else {}
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
        _lockstep(base, head, pick_a, pick_b, index, rng, spent, clock, prestart)


def _add(phases: dict[str, float], name: str, seconds: float) -> None:
    phases[name] = phases.get(name, 0.0) + seconds


def _lockstep(
    base: Runner,
    head: Runner,
    todo_a: list[CaseSpec],
    todo_b: list[CaseSpec],
    index: int,
    rng: random.Random,
    phases: dict[str, float],
    clock: Callable[[], float],
    prestart: Callable[[], None] | None,
) -> None:
    settings = base.settings
    timeout = settings.case_timeout_s
    done_a: list[str] = []
    done_b: list[str] = []
    workers: list[WorkerProcess] = []
    sides = {id(base): done_a, id(head): done_b}
    t0 = clock()
    try:
        wa = base.lockstep_worker(todo_a, index, done_a, "A")
        workers.append(wa)
        wb = head.lockstep_worker(todo_b, index, done_b, "B")
        workers.append(wb)
        setup = timeout * max(1, len(todo_a)) + 120.0
        ready_a, ready_b = wa.wait_for(Prepared, setup), wb.wait_for(Prepared, setup)
        base.learn_imports(ready_a.imported)
        head.learn_imports(ready_b.imported)
        agreed = agreed_iterations(ready_a, ready_b)
        t1 = clock()
        _add(phases, "start", t1 - t0)
        live = [s.id for s in todo_a if s.id in agreed]
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
                pair = [(0, wa), (1, wb)] if rng.random() < 0.5 else [(1, wb), (0, wa)]
                for side, worker in pair:
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
            prestart()  # the next pair's processes start while this one finishes: no sample is being taken
        finish_pair([wa, wb], base.uses_gpu() or head.uses_gpu(), rng, timeout * max(1, len(todo_a)))
        _add(phases, "finish", clock() - t2)
    except WorkerLost as lost:
        failed_side = base if workers and lost.worker is workers[0] else head
        if lost.case is not None:
            failed_side.record_error(lost.case, lost.kind, lost.reason, index, sides[id(failed_side)])
        for w in workers:
            w.close()
        for runner, todo, done in ((base, todo_a, done_a), (head, todo_b, done_b)):
            rest = [s.id for s in todo if s.id not in done]
            if rest:
                t3 = clock()
                runner.run_round(index, rest)
                _add(phases, "rounds", clock() - t3)
    finally:
        for w in workers:
            w.close()
    base.write_partial()
    head.write_partial()
