"""Do the VM's slow spells hit every kind of work alike? (issue #3 investigation)

Times three workloads in turn, call by call, in windows of 20 calls for SECONDS: a 384x384 float32 matmul (working
set ~1.7 MB, beyond L2), 40 products of 64x64 matrices (L1/L2-resident) and a pure-Python loop over 1000 floats
(no memory traffic to speak of). Prints, per workload, the spread of the window medians (5th-95th percentile) and
the correlation of log window medians between workloads. If only the memory-heavy op moved, the cause would be
shared-cache or memory-bandwidth contention; if all move together, the core itself runs slower.
Usage: python benchmarks/lab/speed_correlation.py [SECONDS]
"""

from __future__ import annotations

import math
import statistics
import sys
import time

import torch


def corr(p: list[float], q: list[float]) -> float:
    mp, mq = statistics.fmean(p), statistics.fmean(q)
    num = sum((a - mp) * (b - mq) for a, b in zip(p, q, strict=True))
    return num / math.sqrt(sum((a - mp) ** 2 for a in p) * sum((b - mq) ** 2 for b in q))


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    torch.set_num_threads(1)
    big, small, floats = torch.randn(384, 384), torch.randn(64, 64), [1.0] * 1000

    def small_products() -> None:
        for _ in range(40):
            small @ small

    def python_loop() -> None:
        total = 0.0
        for v in floats:
            total += v * 1.0001

    work = {"matmul384": lambda: big @ big, "matmul64x40": small_products, "python_loop": python_loop}
    for _ in range(50):
        for fn in work.values():
            fn()
    windows: dict[str, list[float]] = {name: [] for name in work}
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        times: dict[str, list[float]] = {name: [] for name in work}
        for _ in range(20):
            for name, fn in work.items():
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
        for name, ts in times.items():
            windows[name].append(statistics.median(ts))
    for name, values in windows.items():
        v = sorted(values)
        p5, p95 = v[len(v) // 20], v[-(len(v) // 20) - 1]
        print(f"{name}: {len(v)} windows, median {statistics.median(v) * 1e3:.3f} ms, "
              f"5th-95th percentile {p5 * 1e3:.3f}-{p95 * 1e3:.3f} ms (x{p95 / p5:.2f})")  # fmt: skip
    logs = {name: [math.log(x) for x in values] for name, values in windows.items()}
    names = list(logs)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    print("correlation of log window medians: " + ", ".join(f"{a}~{b} {corr(logs[a], logs[b]):.2f}" for a, b in pairs))


if __name__ == "__main__":
    main()
