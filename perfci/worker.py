"""Worker process: measures one round of a list of cases and streams one JSON event per line to the runner.

Started by the runner as `python -m perfci.worker` with a JSON job on stdin. The worker moves its stdout to a
private descriptor for the protocol and points fd 1 at stderr, so prints in user workloads never corrupt it.
Events: {"event": "start", "case": id} then either {"event": "result", ...} or {"event": "error", ...}.
A crash, hang or memory blow-up is seen by the runner as a "start" with no matching end.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict
from typing import IO, Any

from perfci.profilers import memory
from perfci.profilers.cuda_timing import cuda_timer
from perfci.profilers.telemetry import apply_throttle_rule, energy_block, open_probe, summarize
from perfci.profilers.timing import BlockTimer, TimingSettings, measure
from perfci.profilers.work import resolve_work
from perfci.workloads.api import WorkloadContext
from perfci.workloads.discovery import find_workload


def _emit(stream: IO[str], event: dict[str, Any]) -> None:
    stream.write(json.dumps(event) + "\n")
    stream.flush()


def _set_threads(threads: int) -> int:
    """Pin torch's intra-op threads when the workload uses torch (it is imported only then: it is slow)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return threads
    if threads > 0 and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return int(torch.get_num_threads())


class CheckFailed(Exception):
    """The workload's correctness check rejected its output."""


def _timer_for(device: str, mode: str, torch: Any) -> tuple[BlockTimer | None, int | None, str]:
    if not device.startswith("cuda"):
        return None, None, "perf_counter"
    setup = cuda_timer(torch, mode)
    return setup.timer, setup.fixed_iterations, f"cuda_event/{mode}"


def _run_check(ctx: WorkloadContext) -> None:
    if ctx.check is None:
        return
    try:
        ctx.check()
    except AssertionError as exc:
        raise CheckFailed(f"correctness check failed: {exc}") from None


def measure_case(case: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    """Build the workload, time it, and return the result event (raises on workload errors)."""
    wl = find_workload(case["source"], case["workload"])
    threads = _set_threads(int(job.get("threads", 1)))
    settings = TimingSettings(**{**job.get("timing", {}), **wl.timing})
    ctx = WorkloadContext(device=case["device"], params=dict(case["params"]), seed=int(job.get("seed", 0)))
    mode = str(ctx.params.get("gpu_mode", settings.gpu_mode))
    cuda = _require_cuda() if ctx.device.startswith("cuda") else None
    if cuda is not None:
        cuda.cuda.synchronize()
        cuda.cuda.reset_peak_memory_stats()
    gc.collect()
    memory.reset_peak_rss()
    rss_before = memory.current_rss()
    fn: Callable[[], object] = wl(ctx, **ctx.params)
    _run_check(ctx)
    torch = sys.modules.get("torch")
    flops, nbytes, work_sources = resolve_work(fn, ctx.flops, ctx.bytes, torch)
    timer, fixed, timer_name = _timer_for(ctx.device, mode, torch)
    probe = open_probe(_device_index(ctx.device)) if cuda is not None else None
    snapshots: list[dict[str, Any]] = []
    before = (lambda: snapshots.append(probe.snapshot())) if probe is not None else None
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        outcome = measure(fn, time.perf_counter, settings, timer, fixed, before)
    finally:
        if gc_was_enabled:
            gc.enable()
    peak = memory.peak_rss()
    telemetry: dict[str, Any] = {
        "timer_overhead_s": outcome.timer_overhead_s,
        "timer": timer_name,
        "work_sources": work_sources,
    }
    samples = outcome.samples
    if probe is not None and snapshots:
        start, end, calls = snapshots[0], snapshots[-1], 0
        if timer is not None and mode != "cold" and settings.energy_window_s > 0:
            start, end, calls = energy_block(
                probe, lambda n: timer(fn, n), outcome.iterations, settings.energy_window_s, time.perf_counter
            )
        telemetry.update(summarize(snapshots, start, end, calls))
        samples, flagged, dropped = apply_throttle_rule(samples, snapshots, settings.min_samples)
        telemetry.update(throttle_flagged=flagged, throttle_dropped=dropped)
    peak_device = int(cuda.cuda.max_memory_allocated()) if cuda is not None else None
    if ctx.teardown is not None:
        ctx.teardown()
    return {
        "event": "result",
        "case": case["id"],
        "flops": flops,
        "bytes": nbytes,
        "round": {
            "iterations": outcome.iterations,
            "samples": list(samples),
            "warmup_s": outcome.warmup_s,
            "stop_reason": outcome.stop_reason,
            "threads": threads,
            "peak_rss_bytes": peak,
            "rss_increase_bytes": max(0, peak - rss_before),
            "peak_device_bytes": peak_device,
            "telemetry": telemetry,
        },
    }


def _device_index(device: str) -> int:
    return int(device.split(":", 1)[1]) if ":" in device else 0


def _require_cuda() -> Any:
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("a CUDA device was requested but torch.cuda.is_available() is False on this runner")
    return torch


def run_job(job: dict[str, Any], out: IO[str]) -> None:
    for case in job["cases"]:
        _emit(out, {"event": "start", "case": case["id"], "pid": os.getpid()})
        try:
            event = measure_case(case, job)
        except CheckFailed as exc:
            event = {"event": "error", "case": case["id"], "kind": "check", "message": str(exc)}
        except MemoryError:
            event = {"event": "error", "case": case["id"], "kind": "oom", "message": "the workload ran out of memory"}
        except Exception as exc:
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            where = f"{os.path.basename(frame.filename)}:{frame.lineno}"
            event = {
                "event": "error",
                "case": case["id"],
                "kind": "raised",
                "message": f"{type(exc).__name__}: {exc} (at {where})",
            }
        event["pid"] = os.getpid()
        _emit(out, event)


def main() -> None:
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    job = json.loads(sys.stdin.read())
    if job.get("cpu_affinity"):
        os.sched_setaffinity(0, set(job["cpu_affinity"]))
    _emit(protocol, {"event": "ready", "pid": os.getpid(), "settings": asdict(TimingSettings())})
    run_job(job, protocol)
    _emit(protocol, {"event": "done"})


if __name__ == "__main__":
    main()
