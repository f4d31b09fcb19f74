"""GPU timing with CUDA events: hot, cold (L2 flushed before each sample) and CUDA-graph replay.

The torch module is passed in (never imported at module import time), so unit tests drive this code with a
fake `torch` that records the order of calls; the GPU machine runs it for real (benchmarks/gpu_check.sh).

- hot: `iterations` back-to-back calls between two events; caches stay warm.
- cold: before each sample a buffer larger than the L2 is read (outside the timed region), then ONE call is
  timed between events, so every timed call starts with a cold L2. Iterations are forced to 1. A launch guard
  (a GPU spin kernel enqueued first) holds the stream until the host has enqueued the flush, the events and the
  call, so the GPU never idles inside the timed region waiting for the host to launch the call.
- sustained: as hot, but the GPU never idles: after the end event, untimed calls (half a block) are enqueued
  before the host waits for that event, so they run while the host reads telemetry and enqueues the next block.
  Before sampling, the case runs back to back until the power and thermal steady state (timing.sustain); the
  clock and power reached are recorded. This is what a training loop sees; hot mode is a burst at boost clock.
- sustained-cold: sustained, with the L2 flushed (read, as in cold mode) before every call: the cadence of
  `triton.testing.do_bench` and nvbench, and closer than back-to-back calls to a training step, where memory-bound
  kernels run between the GEMMs. Each call is timed between its own events, the flushes are not; the GPU never
  idles (untimed flush+call pairs are queued behind each block), so the power and clock reach the steady state of
  that cadence. Without a launch guard: a block whose host enqueueing outlasted its GPU time (calls shorter than
  the host's launches) is counted in `host_bound_blocks`, and such a case belongs in cold mode.
- graph: `iterations` calls are captured once into a CUDA graph (after warm-up on a side stream); a sample
  replays the graph between events, behind the same launch guard. Launch overhead disappears; per-call time =
  sample / iterations.
Every sample ends with an event synchronise, so the host clock never times unfinished work.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perfci.profilers.timing import BlockTimer

SUSTAINED = "sustained"
SUSTAINED_COLD = "sustained-cold"
MODES = ("hot", "cold", "graph", SUSTAINED, SUSTAINED_COLD)
SETTLING_MODES = (SUSTAINED, SUSTAINED_COLD)  # settled to the power and thermal steady state before sampling
FLUSHING_MODES = ("cold", SUSTAINED_COLD)  # the L2 flushed before every timed call
DEFAULT_L2_BYTES = 64 * 2**20
GUARD_START_S = 200e-6  # first launch-guard length; grows when the host needs longer to enqueue a sample
GUARD_MAX_S = 20e-3
GUARD_RETRIES = 3  # a sample whose enqueueing outlasted the guard is taken again, up to this many times


@dataclass(frozen=True)
class CudaTimerSetup:
    timer: BlockTimer
    fixed_iterations: int | None  # cold mode: 1; otherwise calibrated
    flush_bytes: int


def l2_bytes(torch: Any, device: int = 0) -> int:
    props = torch.cuda.get_device_properties(device)
    return int(getattr(props, "L2_cache_size", 0) or DEFAULT_L2_BYTES)


def event_block_timer(torch: Any, trailing: Callable[[int], int] = lambda iterations: 0) -> BlockTimer:
    """Hot mode: events around `iterations` back-to-back calls on the current stream; `trailing(iterations)`
    untimed calls are enqueued after the end event, before it is waited for."""

    def time_block(fn: Callable[[], object], iterations: int) -> float:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            fn()
        end.record()
        for _ in range(trailing(iterations)):
            fn()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3

    return time_block


def sustained_block_timer(torch: Any) -> BlockTimer:
    """Sustained mode: the hot timer with `iterations // 2 + 1` untimed calls enqueued before the end event is
    waited for. The next block queues behind them, so the GPU runs without the idle gaps of hot mode (host
    bookkeeping, NVML reads between samples), which let it cool and boost."""
    return event_block_timer(torch, trailing=lambda iterations: iterations // 2 + 1)


class LaunchGuard:
    """Holds the current stream with a spin kernel (`torch.cuda._sleep`) while the host enqueues a sample.

    Without it, one timed call after a flush is timed from the start event to the end event on the GPU, and
    if the host has not launched the call by the time the GPU reaches the start event (a torch op costs the
    host several µs to tens of µs), the idle gap is timed too: on an H200 the cold/hot ratio of an 8 MiB sum
    read 1.08 in one run and 4.33 in another. `covered(queued_s)` tells whether the host finished enqueueing
    (`queued_s` after holding) before the spin could end; if not, the guard grows for the next try. Where
    torch lacks `_sleep` the guard does nothing and every sample counts as covered.
    """

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.sleep: Callable[[int], None] | None = getattr(torch.cuda, "_sleep", None)
        self.guard_s = GUARD_START_S
        self.cycles_per_s = self._calibrate(self.sleep) if self.sleep is not None else 0.0

    def _calibrate(self, sleep: Callable[[int], None]) -> float:
        """Spin cycles per second, from one timed 1M-cycle spin (about 0.5 ms at 2 GHz)."""
        start = self.torch.cuda.Event(enable_timing=True)
        end = self.torch.cuda.Event(enable_timing=True)
        cycles = 1_000_000
        start.record()
        sleep(cycles)
        end.record()
        end.synchronize()
        return cycles / (float(start.elapsed_time(end)) / 1e3)

    def hold(self) -> None:
        if self.sleep is not None:
            self.sleep(int(self.guard_s * self.cycles_per_s))

    def covered(self, queued_s: float) -> bool:
        if self.sleep is None or queued_s < self.guard_s:
            return True
        self.guard_s = min(GUARD_MAX_S, max(2 * self.guard_s, 4 * queued_s))
        return False


def cold_block_timer(torch: Any, flush_bytes: int, clock: Callable[[], float] = time.perf_counter) -> BlockTimer:
    """Cold mode: read a buffer of `flush_bytes` (2x L2) before each timed call; the flush is not timed.

    The flush *reads* (a sum into one scalar) rather than writes: a write flush leaves the L2 full of dirty
    lines that the timed kernel then has to write back, which slows even kernels whose working set is far
    larger than the L2 (measured on an H200: +4.8% for a 2 GiB reduction with a memset flush). A LaunchGuard
    keeps host launch latency out of the timed region; a sample the guard did not cover is taken again.
    """
    scratch = torch.empty(flush_bytes // 4, dtype=torch.float32, device="cuda")
    scratch.fill_(1.0)
    guard = LaunchGuard(torch)

    def one_call(fn: Callable[[], object]) -> tuple[Any, Any]:
        scratch.sum()  # evicts the working set from L2 with clean lines
        return _timed(torch, fn)

    def time_block(fn: Callable[[], object], iterations: int) -> float:
        return sum(_guarded(guard, clock, lambda: one_call(fn)) for _ in range(iterations))

    return time_block


class SustainedColdTimer:
    """Sustained-cold mode's block timer: `iterations` pairs of (L2 flush, call between its own events), then
    `iterations // 2 + 1` untimed pairs queued before the host waits, so the GPU never idles between blocks. A
    sample is the sum of the calls' event times. `host_bound_blocks` counts the blocks in which the GPU caught up
    with the host: the last call's start event had already passed when the host had just launched that call, so
    the GPU waited for launches, inside timed calls too (calls shorter than the host's launches: use cold mode)."""

    def __init__(self, torch: Any, flush_bytes: int) -> None:
        self.torch = torch
        self.scratch = torch.empty(flush_bytes // 4, dtype=torch.float32, device="cuda")
        self.scratch.fill_(1.0)
        self.host_bound_blocks = 0

    def __call__(self, fn: Callable[[], object], iterations: int) -> float:
        calls = []
        for _ in range(iterations):
            self.scratch.sum()
            calls.append(_timed(self.torch, fn))
        if calls[-1][0].query():  # the GPU had reached the last timed call before the host was done launching it
            self.host_bound_blocks += 1
        for _ in range(iterations // 2 + 1):
            self.scratch.sum()
            fn()
        calls[-1][1].synchronize()
        return sum(float(start.elapsed_time(end)) for start, end in calls) / 1e3


def _timed(torch: Any, fn: Callable[[], object]) -> tuple[Any, Any]:
    """Enqueue `fn` between two timing events; returns (start, end)."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    return start, end


def _guarded(guard: LaunchGuard, clock: Callable[[], float], enqueue: Callable[[], tuple[Any, Any]]) -> float:
    """One sample enqueued behind the launch guard: seconds between the events `enqueue` returns. A sample whose
    enqueueing outlasted the guard is taken again (with a longer guard), up to GUARD_RETRIES times."""
    for attempt in range(GUARD_RETRIES + 1):
        t0 = clock()
        guard.hold()
        start, end = enqueue()
        queued = clock() - t0
        end.synchronize()
        if guard.covered(queued) or attempt == GUARD_RETRIES:
            break
    return float(start.elapsed_time(end)) / 1e3


def graph_block_timer(torch: Any, clock: Callable[[], float] = time.perf_counter) -> BlockTimer:
    """Graph mode: capture `iterations` calls once per iteration count, then time replays with events. The
    launch guard keeps the host's replay launch (several µs) out of the timed region, as in cold mode."""
    graphs: dict[int, Any] = {}
    guard = LaunchGuard(torch)

    def capture(fn: Callable[[], object], iterations: int) -> Any:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # warm-up on a side stream, as capture requires
                fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(iterations):
                fn()
        torch.cuda.synchronize()
        return graph

    def time_block(fn: Callable[[], object], iterations: int) -> float:
        if iterations not in graphs:
            graphs[iterations] = capture(fn, iterations)
        return _guarded(guard, clock, lambda: _timed(torch, graphs[iterations].replay))

    return time_block


def cuda_timer(torch: Any, mode: str, clock: Callable[[], float] = time.perf_counter) -> CudaTimerSetup:
    if mode not in MODES:
        raise ValueError(f"unknown GPU timing mode {mode!r}; expected one of {', '.join(MODES)}")
    flush = 2 * l2_bytes(torch)
    if mode == "cold":
        return CudaTimerSetup(cold_block_timer(torch, flush, clock), 1, flush)
    if mode == "graph":
        return CudaTimerSetup(graph_block_timer(torch, clock), None, 0)
    if mode == SUSTAINED:
        return CudaTimerSetup(sustained_block_timer(torch), None, 0)
    if mode == SUSTAINED_COLD:
        return CudaTimerSetup(SustainedColdTimer(torch, flush), None, flush)
    return CudaTimerSetup(event_block_timer(torch), None, 0)
