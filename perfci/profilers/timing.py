"""CPU timing: warm-up, iteration calibration and adaptive sampling against an injected clock.

The clock is any zero-argument callable returning seconds (e.g. `time.perf_counter`); tests inject a fake one.
A `BlockTimer` times `iterations` calls of a function; the CPU one reads the clock around the loop, a GPU one
(see `cuda_timing`) records CUDA events instead. Everything here takes its clock and settings as arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from perfci.stats.summary import relative_halfwidth

Clock = Callable[[], float]


class BlockTimer(Protocol):
    def __call__(self, fn: Callable[[], object], iterations: int) -> float:
        """Seconds taken by `iterations` back-to-back calls of `fn`."""
        ...


@dataclass(frozen=True)
class TimingSettings:
    """How one round samples a case. Times in seconds."""

    warmup_s: float = 0.05
    min_warmup_calls: int = 3
    min_sample_s: float = 0.002  # a sample lasts at least this long ...
    max_overhead: float = 0.01  # ... and at least overhead / max_overhead
    max_iterations: int = 1_000_000
    min_samples: int = 10
    max_samples: int = 1000
    noise_target: float = 0.01  # stop when the median's relative CI half-width is below this
    confidence: float = 0.95
    budget_s: float = 0.4  # time budget for sampling in one round (calibration and warm-up excluded)
    gpu_mode: str = "hot"  # CUDA cases: hot | cold | graph (see cuda_timing)
    energy_window_s: float = 0.5  # CUDA cases with NVML: contiguous block for energy per call (0: off)
    speed_reference: bool = False  # CPU torch cases: time the speed reference before each sample (reference.py)


@dataclass(frozen=True)
class SamplingOutcome:
    iterations: int
    samples: tuple[float, ...]
    warmup_s: float
    stop_reason: str  # noise_target | budget | max_samples
    timer_overhead_s: float


def clock_block_timer(clock: Clock) -> BlockTimer:
    """A BlockTimer that reads `clock` before and after the loop."""

    def time_block(fn: Callable[[], object], iterations: int) -> float:
        start = clock()
        for _ in range(iterations):
            fn()
        return clock() - start

    return time_block


def timer_overhead(clock: Clock, reps: int = 50) -> float:
    """Smallest observed cost of one clock read pair (the floor a sample must dwarf)."""
    best = float("inf")
    for _ in range(reps):
        t0 = clock()
        t1 = clock()
        best = min(best, t1 - t0)
    return max(best, 0.0)


def warm_up(fn: Callable[[], object], clock: Clock, settings: TimingSettings) -> float:
    """Call `fn` until `warmup_s` has passed and at least `min_warmup_calls` calls were made."""
    start = clock()
    calls = 0
    while calls < settings.min_warmup_calls or clock() - start < settings.warmup_s:
        fn()
        calls += 1
    return clock() - start


def calibrate(fn: Callable[[], object], timer: BlockTimer, overhead: float, settings: TimingSettings) -> int:
    """Smallest power-of-two iteration count whose block lasts long enough for the overhead to be < max_overhead."""
    target = max(settings.min_sample_s, overhead / settings.max_overhead)
    iterations = 1
    while iterations < settings.max_iterations:
        elapsed = timer(fn, iterations)
        if elapsed >= target:
            break
        # jump close to the target, then keep doubling; never more than x16 at once
        factor = min(16, max(2, int(target / elapsed) + 1)) if elapsed > 0 else 16
        iterations = min(settings.max_iterations, iterations * factor)
    return iterations


@dataclass
class Sampler:
    """Adaptive sampling of one case, runnable in slices so that a worker can interleave several cases
    (each case's samples then spread over the whole round instead of one burst)."""

    fn: Callable[[], object]
    timer: BlockTimer
    clock: Clock
    iterations: int
    settings: TimingSettings
    before_sample: Callable[[], None] | None = None
    samples: list[float] = field(default_factory=list)
    stop_reason: str | None = None

    def run_slice(self, budget_s: float, final: bool = True) -> None:
        """Sample for up to `budget_s`. Stops the case for good on the noise target or max_samples; the
        final slice also keeps going until `min_samples` are taken, then stops on the budget."""
        st = self.settings
        start = self.clock()
        while self.stop_reason is None:
            if self.before_sample is not None:
                self.before_sample()
            self.samples.append(self.timer(self.fn, self.iterations))
            n = len(self.samples)
            if n >= st.max_samples:
                self.stop_reason = "max_samples"
            elif n >= st.min_samples and relative_halfwidth(self.samples, st.confidence) <= st.noise_target:
                self.stop_reason = "noise_target"
            elif self.clock() - start >= budget_s and (not final or n >= st.min_samples):
                if final:
                    self.stop_reason = "budget"
                return

    def take(self, n: int = 1, rewarm: int = 0) -> float:
        """Take exactly `n` samples, no stopping rule (a lockstep driver decides when to stop); returns the
        time they took on the clock. `rewarm` untimed calls come first: a lockstep driver hands the CPU to
        another process between samples, which evicts this case's data from the caches, and a sample that
        starts cold would carry that refill cost diluted by its iteration count (a bias towards "no change")."""
        start = self.clock()
        for _ in range(rewarm):
            self.fn()
        for _ in range(n):
            if self.before_sample is not None:
                self.before_sample()
            self.samples.append(self.timer(self.fn, self.iterations))
        return self.clock() - start


def sample(
    fn: Callable[[], object],
    timer: BlockTimer,
    clock: Clock,
    iterations: int,
    settings: TimingSettings,
    before_sample: Callable[[], None] | None = None,
) -> tuple[tuple[float, ...], str]:
    """Take samples until the noise target is met, the budget runs out or max_samples is reached.

    `before_sample` (e.g. a telemetry probe) runs outside the timed region, before each sample.
    """
    sampler = Sampler(fn, timer, clock, iterations, settings, before_sample)
    sampler.run_slice(settings.budget_s, final=True)
    return tuple(sampler.samples), sampler.stop_reason or "budget"


def measure(
    fn: Callable[[], object],
    clock: Clock,
    settings: TimingSettings,
    timer: BlockTimer | None = None,
    fixed_iterations: int | None = None,
    before_sample: Callable[[], None] | None = None,
) -> SamplingOutcome:
    """Warm up, calibrate, then sample adaptively. `timer` defaults to reading `clock` around each block;
    `fixed_iterations` skips calibration (cold GPU mode times one call per sample)."""
    block = timer or clock_block_timer(clock)
    warm = warm_up(fn, clock, settings)
    overhead = timer_overhead(clock)
    iterations = fixed_iterations or calibrate(fn, block, overhead, settings)
    samples, reason = sample(fn, block, clock, iterations, settings, before_sample)
    return SamplingOutcome(iterations, samples, warm, reason, overhead)
