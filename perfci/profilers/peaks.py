"""Runner peaks, measured once per runner by calibration micro-benchmarks and cached with the fingerprint.

- CPU memory bandwidth: `dst.copy_(src)` of a 256 MiB float32 tensor (bytes counted: read + write), with the
  run's thread count; the best of 7 timed copies after 2 warm-ups (interference only slows a copy down,
  so the fastest repetition is the least disturbed one: a peak is what the machine can do).
- CPU FLOP/s: float32 matmul, the fastest of n = 256, 384, 512, 768 and 1024, same threads (a size that fits
  the caches can run faster than n=1024: the default suite's n=384 read 1.11x an n=1024 peak, "implausible").
- GPU bandwidth: device-to-device copy of 1 GiB (read + write), CUDA events; GPU FLOP/s: bf16 matmul, n=8192.
- GPU sustained clock: the SM clock and power NVML reads while that matmul runs back to back for 8 s (the last
  quarter's medians): what a steady load holds, against which a burst's boost clock is named in the reports.
These are *achieved* peaks on this runner with these libraries, the honest denominator for "% of peak": a
kernel cannot beat the copy by much, and a spec-sheet number would make every kernel look poor.

Run as `python -m perfci.profilers.peaks DEVICE THREADS` (the runner does, in a worker process, so the parent
never imports torch); it prints one JSON object.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CACHE_VERSION = 4  # 3: CUDA peaks hold the sustained SM clock and power; 4: the CPU matmul peak over sizes
CPU_MATMUL_SIZES = (256, 384, 512, 768, 1024)


def cache_key(fp: dict[str, Any], device: str, threads: int) -> str:
    relevant = {
        "v": CACHE_VERSION,
        "cpu": fp.get("cpu_model"),
        "cores": fp.get("cpu_logical_cores"),
        "gpus": [g.get("name") for g in fp.get("gpus") or []],
        "driver": fp.get("gpu_driver"),
        "libs": fp.get("libraries"),
        "device": device,
        "threads": threads,
    }
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]


def load_cached(cache_dir: Path, key: str) -> dict[str, Any] | None:
    """The cached peaks, or None where there are none or the file is damaged (`[1]` made every run fail with a
    traceback until it was deleted by hand): they are measured again."""
    path = cache_dir / f"peaks-{key}.json"
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def store_cached(cache_dir: Path, key: str, peaks: dict[str, Any]) -> None:
    """Keep the measured peaks for the next run; a cache that cannot be written (a read-only or full home) only
    costs the next run the measurement again (it stopped the run, blaming `--out`)."""
    path = cache_dir / f"peaks-{key}.json"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(peaks))
        tmp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _best_time(fn: Callable[[], object], sync: Callable[[], None], reps: int = 7) -> float:
    for _ in range(2):
        fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return min(times)


def _best_event_time(torch: Any, fn: Callable[[], object], reps: int = 7) -> float:
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return float(min(times))


def measure_peaks(device: str, threads: int) -> dict[str, Any]:
    import torch

    if threads > 0:
        torch.set_num_threads(threads)
    if device.startswith("cuda"):
        src = torch.empty(2**28, dtype=torch.float32, device=device).uniform_()
        dst = torch.empty_like(src)
        t_copy = _best_event_time(torch, lambda: dst.copy_(src))
        n = 8192
        a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
        t_mm = _best_event_time(torch, lambda: a @ b)
        mm_dtype = "bfloat16"
        held = sustained_clock(torch, lambda: a @ b, device)
    else:
        src = torch.empty(2**26, dtype=torch.float32).uniform_()
        dst = torch.empty_like(src)
        t_copy = _best_time(lambda: dst.copy_(src), lambda: None)
        rates = {}
        for size in CPU_MATMUL_SIZES:
            a, b = torch.randn(size, size), torch.randn(size, size)
            rates[size] = 2.0 * size**3 / _best_time(functools.partial(torch.matmul, a, b), lambda: None)
        n = max(rates, key=lambda k: rates[k])
        t_mm = 2.0 * n**3 / rates[n]
        mm_dtype = "float32"
        held = {}
    nbytes = 2 * src.numel() * src.element_size()
    return {
        "device": device,
        "threads": int(torch.get_num_threads()),
        "bandwidth_gbps": nbytes / t_copy / 1e9,
        "flops": 2.0 * n**3 / t_mm,
        "method": f"copy of {src.numel() * 4 // 2**20} MiB (read+write); {mm_dtype} matmul n={n}; best of 7",
        **held,
    }


SOAK_S = 8.0  # the GEMM runs back to back this long; the clock of its last quarter is the one the GPU holds


def sustained_clock(
    torch: Any,
    fn: Callable[[], object],
    device: str,
    soak_s: float = SOAK_S,
    probe: Any = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    """The SM clock and power the GPU holds under a sustained heavy load (the bf16 GEMM back to back for
    `soak_s`): the medians of NVML's readings over the last quarter. Short bursts run at boost clocks that such a
    load does not hold (docs/gpu.md); {} without NVML."""
    from perfci.profilers.telemetry import open_probe

    index = int(device.split(":", 1)[1]) if ":" in device else 0
    probe = probe if probe is not None else open_probe(index)
    if probe is None:
        return {}
    readings: list[tuple[float, dict[str, Any]]] = []
    start = clock()
    while (now := clock()) - start < soak_s:
        for _ in range(8):
            fn()
        torch.cuda.synchronize()
        readings.append((now - start, probe.snapshot()))
    tail = [snap for t, snap in readings if t >= 0.75 * soak_s]
    clocks = sorted(float(v) for s in tail if isinstance(v := s.get("sm_clock_mhz"), int | float))
    power = sorted(float(v) for s in tail if isinstance(v := s.get("power_w"), int | float))
    out: dict[str, Any] = {}
    if clocks:
        out["sustained_sm_clock_mhz"] = clocks[len(clocks) // 2]
    if power:
        out["sustained_power_w"] = power[len(power) // 2]
    return out


if __name__ == "__main__":
    print(json.dumps(measure_peaks(sys.argv[1], int(sys.argv[2]))))
