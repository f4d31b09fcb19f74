"""How the machine's speed moves within one process (issue #3 investigation).

Times a 384x384 float32 matmul and a 256x4096 softmax (torch, 1 thread) alternately in windows of 30 calls for
SECONDS and prints one line per window: elapsed seconds, median matmul ms, median softmax ms, the window's thread
CPU time over wall time, and the CPU steal ticks (/proc/stat) during the window. A summary line follows. On the
2-vCPU CI VM the matmul window medians ranged 1.4-3.0 ms within 90 s, with slow stretches of about a minute, while
CPU time stayed equal to wall time and steal stayed near 0 (docs/measurement.md). Last, the spread of the medians
of 5-, 10- and 30-s blocks of windows: how much averaging time buys.
Usage: python benchmarks/lab/speed_trace.py [SECONDS]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch


def steal_ticks() -> int:
    """Total CPU steal time in clock ticks (8th value of the `cpu` line of /proc/stat); 0 where there is none."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return 0
    return int(fields[8]) if len(fields) > 8 else 0


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 90.0
    torch.set_num_threads(1)
    a = torch.randn(384, 384)
    x = torch.randn(256, 4096)
    for _ in range(50):
        a @ a
    start = time.perf_counter()
    windows: list[tuple[float, float, int]] = []
    while time.perf_counter() - start < seconds:
        mm, sm = [], []
        s0, w0, c0 = steal_ticks(), time.perf_counter(), time.thread_time()
        for _ in range(30):
            t0 = time.perf_counter()
            a @ a
            t1 = time.perf_counter()
            torch.softmax(x, -1)
            t2 = time.perf_counter()
            mm.append(t1 - t0)
            sm.append(t2 - t1)
        ratio = (time.thread_time() - c0) / (time.perf_counter() - w0)
        steal = steal_ticks() - s0
        mm.sort()
        sm.sort()
        windows.append((mm[15], ratio, steal, time.perf_counter() - start))
        print(
            f"{time.perf_counter() - start:.2f} {mm[15] * 1e3:.3f} {sm[15] * 1e3:.3f} {ratio:.3f} {steal}", flush=True
        )
    medians = sorted(w[0] for w in windows)
    ratios = sorted(w[1] for w in windows)
    print(
        f"windows {len(windows)}: matmul median {medians[0] * 1e3:.3f}-{medians[-1] * 1e3:.3f} ms; "
        f"cpu/wall {ratios[0]:.3f}-{ratios[-1]:.3f} (median {ratios[len(ratios) // 2]:.3f}); "
        f"steal ticks per window max {max(w[2] for w in windows)}, total {sum(w[2] for w in windows)}"
    )
    print_block_spread(windows)


def print_block_spread(windows: list[tuple[float, float, int, float]]) -> None:
    """How the spread shrinks with averaging time: the windows grouped into blocks of 5, 10 and 30 s, and the
    spread (max/min - 1) of the blocks' median matmul times (full blocks of more than 5 windows only)."""
    for block_s in (5, 10, 30):
        blocks: dict[int, list[float]] = {}
        for median, _, _, at in windows:
            blocks.setdefault(int(at // block_s), []).append(median)
        meds = [statistics.median(v) for _, v in sorted(blocks.items()) if len(v) > 5]
        if len(meds) > 1:
            print(f"{block_s}-s blocks: {len(meds)}, spread of their medians {max(meds) / min(meds) - 1:.1%}")


if __name__ == "__main__":
    main()
