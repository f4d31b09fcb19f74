"""In-process measurement of one callable, for the `perf` fixture: perfci's own timing (profilers/timing.py:
warm-up, calibration of the iterations per sample, the adaptive sampler), repeated in `rounds` rounds.

The rounds run in the test's process, one after the other, not in fresh worker processes as `perfci run` does:
a pytest test's callable is a closure over the test's own objects and fixtures, which cannot be shipped to a
worker. Each round warms up and calibrates again after a garbage collection, so the per-round values still
carry the run-to-run variation that warm-up and calibration add; what they cannot carry is the variation
between processes (allocator state, address layout), which the unpaired comparison's job term covers.
"""

from __future__ import annotations

import functools
import gc
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from perfci.format.model import MIN_SECONDS, CaseResult, CaseSpec, CaseStatus, Round
from perfci.metrics import case_metrics
from perfci.options import ROUND_TIME, ROUNDS, THREADS
from perfci.profilers.contention import ContentionWatch
from perfci.profilers.timing import Clock, TimingSettings, calibrate, clock_block_timer, sample, timer_overhead, warm_up

MIN_ROUNDS = int(ROUNDS.least())  # the comparison needs two rounds a side to estimate the noise


@dataclass(frozen=True)
class InProcessSettings:
    """How the `perf` fixture measures: `rounds` rounds, each sampling for up to `budget_s` seconds."""

    rounds: int = ROUNDS.default
    budget_s: float = ROUND_TIME.plugin_default
    threads: int = THREADS.default  # torch's intra-op threads while measuring, as `perfci run --threads` (0: own)

    def timing(self) -> TimingSettings:
        """Warm-up and calibration scaled to the budget, so a small budget keeps a test fast."""
        return TimingSettings(
            budget_s=self.budget_s,
            warmup_s=min(0.05, self.budget_s / 4),
            steady_max_s=min(0.5, self.budget_s),
        )


def _threads() -> int:
    torch = sys.modules.get("torch")  # only when the test uses torch already: never import it here
    get = getattr(torch, "get_num_threads", None)
    return int(get()) if callable(get) else 0


@contextmanager
def pinned_threads(threads: int) -> Iterator[int]:
    """torch's intra-op threads set to `threads` while measuring (the test's own count is restored after), when
    the test uses torch; yields the count in force. A test process left at torch's default (one thread per core)
    fell off a cliff when another process took a core: 62 us per call became 8-16 ms."""
    torch = sys.modules.get("torch")
    if torch is None or threads <= 0 or not callable(getattr(torch, "set_num_threads", None)):
        yield _threads()
        return
    before = int(torch.get_num_threads())
    torch.set_num_threads(threads)
    try:
        yield threads
    finally:
        torch.set_num_threads(before)


def _round(
    index: int,
    iterations: int,
    samples: list[float] | tuple[float, ...],
    warmup_s: float,
    reason: str,
    threads: int,
    telemetry: dict[str, Any],
) -> Round:
    """A round measured in this process (marked `in_process` for the comparison's job noise)."""
    positive = tuple(s for s in samples if s > 0) or (MIN_SECONDS,)  # a coarse clock can read 0
    return Round(index, os.getpid(), iterations, positive, warmup_s, reason, threads,
                 telemetry={"in_process": True, **telemetry})  # fmt: skip


def measure_rounds(
    fn: Callable[[], object],
    settings: InProcessSettings,
    clock: Clock = time.perf_counter,
    watch: Callable[[], ContentionWatch] = ContentionWatch,
) -> tuple[Round, ...]:
    """`settings.rounds` rounds of warm-up, calibration and adaptive sampling of `fn`, in this process; each
    round's CPU contention while it sampled is in its telemetry (profilers/contention.py)."""
    timing = settings.timing()
    timer = clock_block_timer(clock)
    rounds: list[Round] = []
    with pinned_threads(settings.threads) as threads:
        for index in range(max(MIN_ROUNDS, settings.rounds)):
            gc.collect()
            warm = warm_up(fn, clock, timing)
            overhead = timer_overhead(clock)
            iterations = calibrate(fn, timer, overhead, timing)
            contention = watch()
            contention.start()
            samples, reason = sample(fn, timer, clock, iterations, timing)
            telemetry = {"timer_overhead_s": overhead, **contention.stop()}
            rounds.append(_round(index, iterations, samples, warm, reason, threads, telemetry))
    return tuple(rounds)


@dataclass(frozen=True)
class FixedPlan:
    """What a `benchmark.pedantic` call fixes: `rounds` timed samples in all and `iterations` calls per sample
    (None: perfci chooses), `warmup_rounds` untimed calls first, and whether a setup runs before each sample."""

    rounds: int | None
    iterations: int | None
    warmup_rounds: int
    setup: bool

    def telemetry(self) -> dict[str, Any]:
        return {"rounds": self.rounds, "iterations": self.iterations, "warmup_rounds": self.warmup_rounds,
                "setup": self.setup}  # fmt: skip


MIN_OPEN_SAMPLES = 5  # samples of a round whose count the test left open, at the least


def split_samples(total: int, rounds: int) -> list[int]:
    """`total` samples over at most `rounds` rounds, as evenly as they go, none empty."""
    k = max(1, min(rounds, total))
    return [total // k + (1 if i < total % k else 0) for i in range(k)]


def measure_fixed(
    target: Callable[..., Any],
    prepare: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]],
    teardown: Callable[..., Any] | None,
    plan: FixedPlan,
    settings: InProcessSettings,
    clock: Clock = time.perf_counter,
    watch: Callable[[], ContentionWatch] = ContentionWatch,
) -> tuple[tuple[Round, ...], Any]:
    """`benchmark.pedantic`'s request measured in this process: the rounds and the target's last return value.

    Each sample: `prepare()` (the setup, untimed), `iterations` timed calls, `teardown` (untimed). Fixed `rounds`
    are spread over `settings.rounds` perfci rounds (fewer when there are fewer samples); left open, each round
    samples until its budget is spent (at least MIN_OPEN_SAMPLES). Fixed `iterations` are used as they are;
    left open, they are calibrated as for `benchmark(fn)` (only without a setup: a setup means one call a sample).
    """
    result: Any = None

    def timed(n: int) -> float:
        nonlocal result
        a, k = prepare()
        start = clock()
        for _ in range(n):
            result = target(*a, **k)
        elapsed = clock() - start
        if teardown is not None:
            teardown(*a, **k)
        return elapsed

    timing = settings.timing()
    per_round = split_samples(plan.rounds, settings.rounds) if plan.rounds else [0] * max(MIN_ROUNDS, settings.rounds)
    rounds: list[Round] = []
    with pinned_threads(settings.threads) as threads:
        for _ in range(plan.warmup_rounds):
            timed(1)
        for index, wanted in enumerate(per_round):
            gc.collect()
            iterations = plan.iterations or 1
            if plan.iterations is None and not plan.setup:
                a, k = prepare()
                call = functools.partial(target, *a, **k)
                iterations = calibrate(call, clock_block_timer(clock), timer_overhead(clock), timing)
            contention = watch()
            contention.start()
            samples: list[float] = []
            deadline = clock() + settings.budget_s
            while len(samples) < wanted if wanted else (len(samples) < MIN_OPEN_SAMPLES or clock() < deadline):
                samples.append(timed(iterations))
            reason = "fixed" if wanted else "budget"
            rounds.append(_round(index, iterations, samples, 0.0, reason, threads, contention.stop()))
    return tuple(rounds), result


def measured_case(
    spec: CaseSpec,
    fn: Callable[[], object],
    settings: InProcessSettings,
    flops: float | None = None,
    nbytes: float | None = None,
    clock: Clock = time.perf_counter,
) -> CaseResult:
    """One case measured in-process, with its metrics derived as for a `perfci run` case."""
    rounds = measure_rounds(fn, settings, clock)
    return CaseResult.of(spec, CaseStatus.OK, rounds, case_metrics(rounds, flops, nbytes), flops=flops, bytes=nbytes)
