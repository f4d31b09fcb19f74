"""How the machine's speed moves within one process (issue #3 investigation).

Times a 384x384 float32 matmul and a 256x4096 softmax (torch, 1 thread) alternately in windows of 30 calls for
SECONDS and prints one line per window: elapsed seconds, median matmul ms, median softmax ms. On the 2-vCPU CI
VM the matmul window medians ranged 1.4-3.0 ms within 90 s, with slow stretches of about a minute.
Usage: python benchmarks/speed_trace.py [SECONDS]
"""

from __future__ import annotations

import sys
import time

import torch


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 90.0
    torch.set_num_threads(1)
    a = torch.randn(384, 384)
    x = torch.randn(256, 4096)
    for _ in range(50):
        a @ a
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        mm, sm = [], []
        for _ in range(30):
            t0 = time.perf_counter()
            a @ a
            t1 = time.perf_counter()
            torch.softmax(x, -1)
            t2 = time.perf_counter()
            mm.append(t1 - t0)
            sm.append(t2 - t1)
        mm.sort()
        sm.sort()
        print(f"{time.perf_counter() - start:.2f} {mm[15] * 1e3:.3f} {sm[15] * 1e3:.3f}", flush=True)


if __name__ == "__main__":
    main()
