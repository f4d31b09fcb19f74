"""In-process measurement of one callable, for the `perf` fixture: perfci's own timing (profilers/timing.py:
warm-up, calibration of the iterations per sample, the adaptive sampler), repeated in `rounds` rounds.

The rounds run in the test's process, one after the other, not in fresh worker processes as `perfci run` does:
a pytest test's callable is a closure over the test's own objects and fixtures, which cannot be shipped to a
worker. Each round warms up and calibrates again after a garbage collection, so the per-round values still
carry the run-to-run variation that warm-up and calibration add; what they cannot carry is the variation
between processes (allocator state, address layout), which the unpaired comparison's job term covers.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from perfci.metrics import case_metrics
from perfci.model import CaseResult, CaseSpec, CaseStatus, Round
from perfci.profilers.timing import Clock, TimingSettings, calibrate, clock_block_timer, sample, timer_overhead, warm_up

MIN_ROUNDS = 2  # the comparison needs two rounds a side to estimate the noise


@dataclass(frozen=True)
class InProcessSettings:
    """How the `perf` fixture measures: `rounds` rounds, each sampling for up to `budget_s` seconds."""

    rounds: int = 5
    budget_s: float = 0.2

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


def measure_rounds(
    fn: Callable[[], object], settings: InProcessSettings, clock: Clock = time.perf_counter
) -> tuple[Round, ...]:
    """`settings.rounds` rounds of warm-up, calibration and adaptive sampling of `fn`, in this process."""
    timing = settings.timing()
    timer = clock_block_timer(clock)
    rounds: list[Round] = []
    for index in range(max(MIN_ROUNDS, settings.rounds)):
        gc.collect()
        warm = warm_up(fn, clock, timing)
        overhead = timer_overhead(clock)
        iterations = calibrate(fn, timer, overhead, timing)
        samples, reason = sample(fn, timer, clock, iterations, timing)
        positive = tuple(s for s in samples if s > 0) or (1e-12,)  # a coarse clock can read 0
        rounds.append(
            Round(
                index=index,
                pid=os.getpid(),
                iterations=iterations,
                samples=positive,
                warmup_s=warm,
                stop_reason=reason,
                threads=_threads(),
                telemetry={"in_process": True, "timer_overhead_s": overhead},
            )
        )
    return tuple(rounds)


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
