"""CPU timing: warm-up, iteration calibration and adaptive sampling against an injected clock.

The clock is any zero-argument callable returning seconds (e.g. `time.perf_counter`); tests inject a fake one.
A `BlockTimer` times `iterations` calls of a function; the CPU one reads the clock around the loop, a GPU one
(see `cuda_timing`) records CUDA events instead. Everything here takes its clock and settings as arguments.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from perfci.options import GPU_MODE, ROUND_TIME
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
    budget_s: float = ROUND_TIME.default  # sampling time of one round (calibration and warm-up excluded)
    gpu_mode: str = GPU_MODE.default  # CUDA cases: hot | cold | graph | sustained | sustained-cold (see cuda_timing)
    device_clock: bool = True  # CUDA cases: profile a few calls after sampling for the device clock (kineto.py)
    steady_tol: float = 0.03  # calibration: a block is steady when not this much faster than the best before it
    steady_max_s: float = 0.5  # calibration: cap on the blocks spent reaching a steady state, then on the median's
    calibration_blocks: int = 5  # calibration: the count comes from the median per-call time of this many blocks
    sustain_window_s: float = 1.0  # sustained GPU mode: readings steady over two windows of this length ...
    sustain_tol: float = 0.02  # ... when their means differ by at most this
    sustain_max_s: float = 15.0  # ... or this much back-to-back running has passed
    # ... in blocks (and samples) of at least this long: the GPU idles while a block is synchronised and timed,
    # and with 2 ms blocks a bf16 GEMM 4096^3 on an H200 ran at ~500 W and its boost clock, while the same GEMM
    # truly back to back sits at the 700 W cap and 1,500 MHz, 15% slower (docs/gpu.md)
    sustain_block_s: float = 0.1
    energy_window_s: float = 0.5  # CUDA cases with NVML: contiguous block for energy per call (0: off)
    speed_reference: bool = False  # CPU torch cases: time the speed reference before each sample (reference.py)


# What each timing setting a workload may set (`timing={...}`) must be: its kind and its closed range. A value
# outside it ended in a case error in every worker (a traceback), or in a case that never stopped sampling.
_HOUR = 3600.0
TIMING_RANGES: dict[str, tuple[type, float, float]] = {
    "warmup_s": (float, 0.0, _HOUR),
    "min_warmup_calls": (int, 0, 1e6),
    "min_sample_s": (float, 0.0, 60.0),
    "max_overhead": (float, 1e-6, 1.0),
    "max_iterations": (int, 1, 1e9),
    "min_samples": (int, 1, 1e6),
    "max_samples": (int, 1, 1e7),
    "noise_target": (float, 1e-6, 1.0),
    "confidence": (float, 0.5, 0.999999),
    "budget_s": (float, 1e-6, ROUND_TIME.most()),  # the --round-time option's upper limit
    "steady_tol": (float, 0.0, 1.0),
    "steady_max_s": (float, 0.0, _HOUR),
    "calibration_blocks": (int, 1, 1000),
    "sustain_window_s": (float, 1e-3, 600.0),
    "sustain_tol": (float, 1e-6, 1.0),
    "sustain_max_s": (float, 0.0, _HOUR),
    "sustain_block_s": (float, 1e-6, 60.0),
    "energy_window_s": (float, 0.0, 600.0),
}


def timing_problem(values: Mapping[str, Any]) -> str | None:
    """Why `values` (timing settings by name) cannot be used, in a few words; None when they can. Names are not
    checked here (the caller knows the fields); `gpu_mode` is a text and `speed_reference` a bool."""
    for name, value in values.items():
        if name == "gpu_mode":
            if not isinstance(value, str):
                return f"gpu_mode must be a text, not {value!r}"
            continue
        if name == "speed_reference":
            if not isinstance(value, bool):
                return f"speed_reference must be true or false, not {value!r}"
            continue
        if name not in TIMING_RANGES:
            continue
        kind, low, high = TIMING_RANGES[name]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or (kind is int and not isinstance(value, int)) or not math.isfinite(value):
            return f"{name} must be {'an integer' if kind is int else 'a number'}, not {value!r}"
        if not low <= value <= high:
            return f"{name} = {value!r} is not between {low:g} and {high:g}"
    low_n, high_n = values.get("min_samples"), values.get("max_samples")
    if isinstance(low_n, int) and isinstance(high_n, int) and high_n < low_n:
        return f"max_samples ({high_n}) is below min_samples ({low_n})"
    return None


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


def _grow(fn: Callable[[], object], timer: BlockTimer, target: float, settings: TimingSettings) -> int:
    """A first iteration count whose block lasts `target`: grow from 1 (x2 to x16 a step). One slow block can
    stop it early; `calibrate` only sizes its warm-up blocks with it."""
    iterations = 1
    while iterations < settings.max_iterations:
        elapsed = timer(fn, iterations)
        if elapsed >= target:
            break
        factor = min(16, max(2, int(target / elapsed) + 1)) if elapsed > 0 else 16
        iterations = min(settings.max_iterations, iterations * factor)
    return iterations


def _count(target: float, per_call: float, settings: TimingSettings) -> int:
    """Calls for a block of `target` seconds at `per_call` seconds a call (at least 1, at most max_iterations)."""
    if per_call <= 0:
        return settings.max_iterations
    return max(1, min(settings.max_iterations, math.ceil(target / per_call)))


STEADY_WINDOW = 3  # blocks per window of the steady-state test


def _steady(per_call: list[float], tol: float) -> bool:
    """The per-call time has stopped falling: the median of the last STEADY_WINDOW blocks is not more than `tol`
    below the median of the STEADY_WINDOW before them (a window, not a block: a gradual ramp falls by less than
    `tol` from one block to the next)."""
    k = STEADY_WINDOW
    if len(per_call) < 2 * k:
        return False
    return statistics.median(per_call[-k:]) >= (1.0 - tol) * statistics.median(per_call[-2 * k : -k])


def calibrate(fn: Callable[[], object], timer: BlockTimer, overhead: float, settings: TimingSettings) -> int:
    """The iterations per sample: enough calls for a block to last `min_sample_s` and to make the overhead
    < max_overhead, from the *median* per-call time of `calibration_blocks` blocks taken *after a steady state*.

    Steady state: blocks run until the median per-call time of the last 3 blocks is not more than `steady_tol` below
    that of the 3 before, i.e. it has stopped falling (a GPU's SM clock ramps up over the first blocks), or until
    `steady_max_s` of blocks. Blocks are resized as the per-call time falls. A single slow block (a clock
    ramp, an idle GPU waking up) therefore no longer sets the count: before, the first block that reached the target
    did, and a 186 us GEMM on an H200 got 1 iteration in 3 rounds of 10 and 11 in the others.
    """
    target = max(settings.min_sample_s, overhead / settings.max_overhead)
    iterations = _grow(fn, timer, target, settings)
    per_call: list[float] = []
    spent = 0.0
    while not _steady(per_call, settings.steady_tol) and spent < settings.steady_max_s:
        elapsed = timer(fn, iterations)
        spent += elapsed
        per_call.append(elapsed / iterations)
        if elapsed < target:
            iterations = max(iterations, _count(target, per_call[-1], settings))
    blocks: list[float] = []
    spent = 0.0
    while len(blocks) < max(1, settings.calibration_blocks) and (len(blocks) < 3 or spent < settings.steady_max_s):
        elapsed = timer(fn, iterations)
        spent += elapsed
        blocks.append(elapsed / iterations)
    return _count(target, statistics.median(blocks), settings)


@dataclass(frozen=True)
class Sustained:
    """What the sustained GPU mode's settling reached: seconds of back-to-back running, whether the readings
    stopped drifting before the cap, which readings decided (`tracked`), and their means over the last window."""

    settle_s: float
    steady: bool
    blocks: int
    tracked: tuple[str, ...]
    readings: dict[str, float]

    def telemetry(self) -> dict[str, Any]:
        return {
            "settle_s": self.settle_s,
            "steady": self.steady,
            "blocks": self.blocks,
            "tracked": list(self.tracked),
            **self.readings,
        }


Reader = Callable[[], Mapping[str, float | None]]


def _mean(rows: list[dict[str, float]], key: str) -> float:
    return statistics.fmean(r[key] for r in rows)


def _drifting(rows: list[tuple[float, dict[str, float]]], now: float, keys: tuple[str, ...], s: TimingSettings) -> bool:
    """Whether any reading's mean over the last window differs from the window before by more than sustain_tol."""
    w = s.sustain_window_s
    last = [r for t, r in rows if t > now - w]
    prev = [r for t, r in rows if now - 2 * w < t <= now - w]
    if now < 2 * w or not last or not prev:
        return True
    return any(abs(_mean(last, k) - _mean(prev, k)) > s.sustain_tol * abs(_mean(prev, k)) for k in keys)


def sustain(
    run_block: Callable[[], float], clock: Clock, settings: TimingSettings, read: Reader | None = None
) -> Sustained:
    """Run blocks back to back (`run_block` returns a block's seconds) until the GPU reaches its power and thermal
    steady state: the SM clock and power (`read`, NVML; or failing that the block time) stop drifting between two
    windows of `sustain_window_s`, or `sustain_max_s` has passed."""
    start = clock()
    rows: list[tuple[float, dict[str, float]]] = []
    keys: tuple[str, ...] = ()
    while True:
        block_s = run_block()
        now = clock() - start
        row = {k: float(v) for k, v in (read() if read is not None else {}).items() if v is not None}
        keys = keys or (tuple(sorted(row)) or ("block_s",))
        rows.append((now, {**row, "block_s": block_s}))
        steady = not _drifting(rows, now, keys, settings)
        if steady or now >= settings.sustain_max_s:
            break
    last = [r for t, r in rows if t > now - settings.sustain_window_s]
    means = {k: _mean(last, k) for k in last[-1] if all(k in r for r in last)}
    return Sustained(now, steady, len(rows), keys, means)


def sustained_settings(settings: TimingSettings) -> TimingSettings:
    """The settings a sustained-mode case is calibrated, settled and sampled with: blocks of at least
    `sustain_block_s`, so that the calls the sustained timer queues behind each block (half a block) outlast the
    host's work between blocks (synchronising, timing, NVML reads) and the GPU never idles."""
    return replace(settings, min_sample_s=max(settings.min_sample_s, settings.sustain_block_s))


def keep_busy(run_block: Callable[[], float], clock: Clock, seconds: float) -> None:
    """Run blocks back to back for `seconds` (sustained mode: before each slice, so the GPU is back at its steady
    state after the Python between slices)."""
    end = clock() + seconds
    while clock() < end:
        run_block()


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
    before_slice: Callable[[], None] | None = None  # sustained GPU mode: back-to-back running before each slice
    samples: list[float] = field(default_factory=list)
    stop_reason: str | None = None

    def run_slice(self, budget_s: float, final: bool = True) -> None:
        """Sample for up to `budget_s`. Stops the case for good on the noise target or max_samples; the
        final slice also keeps going until `min_samples` are taken, then stops on the budget."""
        st = self.settings
        if self.before_slice is not None and self.stop_reason is None:
            self.before_slice()
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
