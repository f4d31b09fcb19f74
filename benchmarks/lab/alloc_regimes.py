"""Per-process allocator regimes (issue #3 investigation): does a process fall into page-faulting every call?

Starts PROCS fresh processes, each alternating for SECONDS: a pure-Python probe, two 384x384 matmuls and two
256x4096 softmaxes (4 MB output each), timed call by call, and prints per process the fastest softmax and
matmul (ms) and the minor page faults the process took. Then the same with glibc malloc's thresholds fixed
(GLIBC_TUNABLES mmap_threshold=32 MiB, trim_threshold=4 GiB).
Usage: python benchmarks/lab/alloc_regimes.py [PROCS] [SECONDS]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time, torch
torch.set_num_threads(1)
a = torch.randn(384, 384); x = torch.randn(256, 4096); floats = [1.0] * 3000
def probe():
    t = 0.0
    for v in floats: t += v * 1.0001
for _ in range(30): a @ a; torch.softmax(x, -1); probe()
mm, sm = [], []
start = time.perf_counter()
while time.perf_counter() - start < float(sys.argv[1]):
    probe()
    t0 = time.perf_counter(); a @ a; a @ a; t1 = time.perf_counter()
    torch.softmax(x, -1); torch.softmax(x, -1); t2 = time.perf_counter()
    mm.append((t1 - t0) / 2); sm.append((t2 - t1) / 2)
print(json.dumps({"mm": min(mm), "sm": min(sm), "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt}))
"""
TUNED = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296"


def main() -> None:
    procs = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    seconds = sys.argv[2] if len(sys.argv) > 2 else "6"
    for label, extra in (("default malloc", {}), ("GLIBC_TUNABLES fixed thresholds", {"GLIBC_TUNABLES": TUNED})):
        print(f"== {label}")
        for i in range(procs):
            env = {**os.environ, **extra}
            out = subprocess.run([sys.executable, "-c", CHILD, seconds], capture_output=True, text=True, env=env)
            d = json.loads(out.stdout)
            print(f"process {i}: softmax min {d['sm'] * 1e3:.3f} ms, matmul min {d['mm'] * 1e3:.3f} ms, "
                  f"minor faults {d['faults']}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
