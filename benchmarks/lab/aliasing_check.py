"""Experiment: does a softmax's speed depend on where its output lands relative to its input (4K aliasing)?

Times `aten._softmax.out` on a 256x4096 float32 input (1 thread), writing into views of one large buffer at
byte offsets chosen so that (output address - input address) mod 4096 takes the values listed, and at a few
offsets with the same low 12 bits but different higher bits. Prints the median ms per offset. On CPUs where a
load that matches an in-flight store in its low 12 address bits stalls (4K aliasing), the offsets 0 mod 4096
stand out; then a case's time depends on where the allocator put its tensors, i.e. on what ran before it in the
process. A second table places the output right after the input's end, at growing gaps (an allocator that
carves the output from the chunk after the input does that). Usage: python benchmarks/lab/aliasing_check.py [REPEATS]
"""

from __future__ import annotations

import statistics
import sys
import time

import torch


def softmax_ms(x: torch.Tensor, y: torch.Tensor, repeats: int) -> float:
    """Median ms of `aten._softmax.out(x) -> y` over `repeats` calls, after 10 warm-up calls."""
    for _ in range(10):
        torch.ops.aten._softmax.out(x, -1, False, out=y)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.ops.aten._softmax.out(x, -1, False, out=y)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    torch.set_num_threads(1)
    rows, cols = 256, 4096
    n = rows * cols
    g = torch.Generator().manual_seed(0)
    buf = torch.empty(3 * n + 2**19, dtype=torch.float32)
    base = (-buf.data_ptr() // 4) % 1024  # first element of buf that is 4096-byte aligned
    x = buf[base : base + n].view(rows, cols)
    x.copy_(torch.randn(rows, cols, generator=g))
    out_start = base + n + 4 * 1024  # output region starts 16 KiB after the input, page-aligned
    print("| output - input, mod 4096 (bytes) | extra pages | median ms |")
    print("| --- | --- | --- |")
    for pages in (0, 1, 3):
        for delta in (0, 64, 256, 1024, 2048, 3072, 4032):
            start = out_start + pages * 1024 + delta // 4
            y = buf[start : start + n].view(rows, cols)
            print(f"| {(y.data_ptr() - x.data_ptr()) % 4096} | {pages} | {softmax_ms(x, y, repeats):.3f} |")
    print("\n| gap between the input's end and the output (bytes) | median ms |")
    print("| --- | --- |")
    for gap in (0, 16, 64, 256, 1024, 4096, 16384, 65536, 131072, 1 << 20):
        start = base + n + gap // 4
        print(f"| {gap} | {softmax_ms(x, buf[start : start + n].view(rows, cols), repeats):.3f} |")


if __name__ == "__main__":
    main()
