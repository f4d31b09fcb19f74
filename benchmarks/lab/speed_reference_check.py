"""How well does a reference kernel timed beside a case cancel the machine's speed? (issue #3, fifth session)

Starts PROCESSES fresh processes one after the other. Each times the four default-suite kernels (matmul 384,
softmax 256x4096, the 512-2048-512 MLP at batch 32, layernorm 512x1024; torch, 1 thread) for SECONDS each, and
before every sample of a case it times three candidate references (float32 matmuls of 128, 192 and 256),
as perfci's `--speed-reference` does with its chosen one. Per process it keeps the median per-call time of each
case and of each reference over that case's samples. Printed: per case, the process-to-process sd of the raw
median and of the ratio case / reference for each reference: the smaller the ratio's sd against the raw one,
the more of the process-to-process scatter is machine speed that the reference follows.
Usage: python benchmarks/lab/speed_reference_check.py [PROCESSES] [SECONDS]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

CHILD = r"""
import json, statistics, sys, time, torch
torch.set_num_threads(1)
g = torch.Generator().manual_seed(0)
torch.manual_seed(0)
a = torch.randn(384, 384, generator=g)
x = torch.randn(256, 4096, generator=g)
z = torch.randn(512, 1024, generator=g)
mlp = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512))
y = torch.randn(32, 512, generator=g)

def matmul(n):
    p, q, o = torch.randn(n, n, generator=g), torch.randn(n, n, generator=g), torch.empty(n, n)
    return lambda: torch.matmul(p, q, out=o)

refs = {"mm128": (matmul(128), 8), "mm192": (matmul(192), 3), "mm256": (matmul(256), 1)}
cases = {
    "matmul": (lambda: a @ a, 1),
    "softmax": (lambda: torch.softmax(x, -1), 1),
    "mlp": (lambda: mlp(y), 1),
    "layernorm": (lambda: torch.nn.functional.layer_norm(z, (1024,)), 6),
}

def block(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n

out = {}
with torch.no_grad():
    for fn, n in [*refs.values(), *cases.values()]:
        for _ in range(10):
            fn()
    for name, (fn, n) in cases.items():
        times = {k: [] for k in [*refs, "case"]}
        end = time.perf_counter() + float(sys.argv[1])
        while time.perf_counter() < end:
            for ref, (rfn, rn) in refs.items():
                times[ref].append(block(rfn, rn))
            times["case"].append(block(fn, n))
        out[name] = {k: statistics.median(v) for k, v in times.items()}
print(json.dumps(out))
"""


def rel_sd(xs: list[float]) -> float:
    return statistics.stdev(xs) / statistics.fmean(xs)


def main() -> None:
    processes = int(sys.argv[1]) if len(sys.argv) > 1 else 24
    seconds = sys.argv[2] if len(sys.argv) > 2 else "0.4"
    runs = [
        json.loads(subprocess.run([sys.executable, "-c", CHILD, seconds], check=True, capture_output=True).stdout)
        for _ in range(processes)
    ]
    refs = [k for k in runs[0]["matmul"] if k != "case"]
    print(f"{processes} processes, {seconds} s per case each; sd across processes (relative)\n")
    print("| case | raw median | " + " | ".join(f"/ {r}" for r in refs) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in refs) + " |")
    for case in runs[0]:
        raw = rel_sd([r[case]["case"] for r in runs])
        ratios = [rel_sd([r[case]["case"] / r[case][ref] for r in runs]) for ref in refs]
        print(f"| {case} | {raw:.1%} | " + " | ".join(f"{x:.1%}" for x in ratios) + " |")


if __name__ == "__main__":
    main()
