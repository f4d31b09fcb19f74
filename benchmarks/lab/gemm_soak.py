"""How a back-to-back bf16 GEMM settles on a GPU: per-call time, SM and memory clock, power, temperature and the
clock-event reasons, every 2 s over `--seconds` of back-to-back calls (issue #15, the sustained mode's settling).

Usage (on a CUDA machine): python benchmarks/lab/gemm_soak.py [--n 4096] [--seconds 40]
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--seconds", type=float, default=40.0)
    args = ap.parse_args()
    import pynvml
    import torch

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    a = torch.randn(args.n, args.n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(args.n, args.n, device="cuda", dtype=torch.bfloat16)
    calls = 50
    print(f"GEMM bf16 {args.n}^3, back to back; every ~2 s: median per-call time of {calls} event-timed calls")
    print(f"{'t s':>6} {'us/call':>9} {'SM MHz':>7} {'mem MHz':>8} {'power W':>8} {'temp C':>7} reasons")
    start = time.perf_counter()
    next_print = 0.0
    while (now := time.perf_counter() - start) < args.seconds:
        marks = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(calls)]
        for s, e in marks:
            s.record()
            a @ b
            e.record()
        torch.cuda.synchronize()
        if now >= next_print:
            per_call = statistics.median(s.elapsed_time(e) for s, e in marks) * 1e3
            sm = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
            mem = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)
            power = pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0
            temp = pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
            reasons = pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)
            print(f"{now:6.1f} {per_call:9.1f} {sm:7d} {mem:8d} {power:8.0f} {temp:7d} {reasons:#x}")
            next_print += 2.0


if __name__ == "__main__":
    main()
