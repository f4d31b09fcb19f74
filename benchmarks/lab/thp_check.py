"""Experiment (issue #3): do transparent huge pages steady the per-process speed on a VM?

The CI VM has THP in `madvise` mode, so torch's heap is backed by 4 KiB pages unless malloc asks for huge ones
(glibc's `glibc.malloc.hugetlb=1` tunable makes it madvise its heap). Under nested paging a TLB miss is costly,
so page size could plausibly explain process-to-process speed differences. This starts PAIRS pairs of fresh
processes, alternating without and with the tunable (both with perfci's fixed malloc thresholds), each timing a
384x384 matmul, a 256x4096 softmax and the default suite's MLP (8 MiB of weights; 1 thread) for SECONDS, and
prints per process the median ms of each and the process's AnonHugePages (KiB) at the end, which shows whether
huge pages were in use.
Usage: python benchmarks/lab/thp_check.py [PAIRS] [SECONDS]
"""

from __future__ import annotations

import os
import subprocess
import sys

from perfci.engine.runner import MALLOC_TUNABLES

CHILD = """
import statistics, time, torch
torch.set_num_threads(1)
g = torch.Generator().manual_seed(0)
a, x = torch.randn(384, 384, generator=g), torch.randn(256, 4096, generator=g)
torch.manual_seed(0)
mlp = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512))
y = torch.randn(32, 512, generator=g)
torch.set_grad_enabled(False)
for _ in range(50):
    a @ a
    torch.softmax(x, -1)
    mlp(y)
mm, sm, ml = [], [], []
t0 = time.perf_counter()
while time.perf_counter() - t0 < {seconds}:
    s = time.perf_counter(); a @ a; mm.append(time.perf_counter() - s)
    s = time.perf_counter(); torch.softmax(x, -1); sm.append(time.perf_counter() - s)
    s = time.perf_counter(); mlp(y); ml.append(time.perf_counter() - s)
huge = next(line.split()[1] for line in open("/proc/self/smaps_rollup") if line.startswith("AnonHugePages"))
meds = " ".join(f"{{statistics.median(v) * 1e3:.3f}}" for v in (mm, sm, ml))
print(f"{{meds}} {{huge}}")
"""


def main() -> None:
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
    print("| pair | THP | matmul median (ms) | softmax median (ms) | mlp median (ms) | AnonHugePages (KiB) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for i in range(pairs):
        for label, extra in (("off", ""), ("on", ":glibc.malloc.hugetlb=1")):
            env = {**os.environ, "GLIBC_TUNABLES": MALLOC_TUNABLES + extra}
            out = subprocess.run(
                [sys.executable, "-c", CHILD.format(seconds=seconds)], env=env, capture_output=True, text=True
            )
            mm, sm, ml, huge = out.stdout.split()
            print(f"| {i + 1} | {label} | {mm} | {sm} | {ml} | {huge} |")


if __name__ == "__main__":
    main()
