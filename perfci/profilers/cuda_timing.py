"""GPU timing with CUDA events: hot, cold (L2 flushed before each sample) and CUDA-graph replay.

The torch module is passed in (never imported at module import time), so unit tests drive this code with a
fake `torch` that records the order of calls; the GPU machine runs it for real (benchmarks/gpu_check.sh).

- hot: `iterations` back-to-back calls between two events; caches stay warm.
- cold: before each sample a buffer larger than the L2 is written (outside the timed region), then ONE call is
  timed between events, so every timed call starts with a cold L2. Iterations are forced to 1.
- graph: `iterations` calls are captured once into a CUDA graph (after warm-up on a side stream); a sample
  replays the graph between events. Launch overhead disappears; per-call time = sample / iterations.
Every sample ends with an event synchronise, so the host clock never times unfinished work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perfci.profilers.timing import BlockTimer

MODES = ("hot", "cold", "graph")
DEFAULT_L2_BYTES = 64 * 2**20


@dataclass(frozen=True)
class CudaTimerSetup:
    timer: BlockTimer
    fixed_iterations: int | None  # cold mode: 1; otherwise calibrated
    flush_bytes: int


def l2_bytes(torch: Any, device: int = 0) -> int:
    props = torch.cuda.get_device_properties(device)
    return int(getattr(props, "L2_cache_size", 0) or DEFAULT_L2_BYTES)


def event_block_timer(torch: Any) -> BlockTimer:
    """Hot mode: events around `iterations` back-to-back calls on the current stream."""

    def time_block(fn: Callable[[], object], iterations: int) -> float:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3

    return time_block


def cold_block_timer(torch: Any, flush_bytes: int) -> BlockTimer:
    """Cold mode: read a buffer of `flush_bytes` (2x L2) before each timed call; the flush is not timed.

    The flush *reads* (a sum into one scalar) rather than writes: a write flush leaves the L2 full of dirty
    lines that the timed kernel then has to write back, which slows even kernels whose working set is far
    larger than the L2 (measured on an H200: +4.8% for a 2 GiB reduction with a memset flush).
    """
    scratch = torch.empty(flush_bytes // 4, dtype=torch.float32, device="cuda")
    scratch.fill_(1.0)

    def time_block(fn: Callable[[], object], iterations: int) -> float:
        total = 0.0
        for _ in range(iterations):
            scratch.sum()  # evicts the working set from L2 with clean lines
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            total += float(start.elapsed_time(end)) / 1e3
        return total

    return time_block


def graph_block_timer(torch: Any) -> BlockTimer:
    """Graph mode: capture `iterations` calls once per iteration count, then time replays with events."""
    graphs: dict[int, Any] = {}

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
        graph = graphs[iterations]
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3

    return time_block


def cuda_timer(torch: Any, mode: str) -> CudaTimerSetup:
    if mode not in MODES:
        raise ValueError(f"unknown GPU timing mode {mode!r}; expected one of {', '.join(MODES)}")
    flush = 2 * l2_bytes(torch)
    if mode == "cold":
        return CudaTimerSetup(cold_block_timer(torch, flush), 1, flush)
    if mode == "graph":
        return CudaTimerSetup(graph_block_timer(torch), None, 0)
    return CudaTimerSetup(event_block_timer(torch), None, 0)
