"""Experiment (issue #3): would dividing by a machine-speed probe make latency stable across invocations?

Each invocation (a fresh process) times four default-suite-like CPU ops, and after every sample of an op one
sample of a fixed reference probe (a small numpy matmul, a vector multiply and a short Python loop). It reports
the raw median per op and the median of (op sample / adjacent probe sample). Run in several processes, the
spread (max/min - 1) of each column across processes says whether a probe-normalised latency would be a
stable figure on this machine. Usage: python benchmarks/lab/speed_probe.py [--runs 6]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable


def one_invocation(slices: int = 15) -> dict[str, tuple[float, float]]:
    import numpy as np
    import torch

    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    a = torch.randn(384, 384, generator=g)
    x = torch.randn(256, 4096, generator=g)
    w1, w2, b = (torch.randn(512, 512, generator=g), torch.randn(512, 512, generator=g),
                 torch.randn(32, 512, generator=g))  # fmt: skip
    rows = torch.randn(512, 1024, generator=g)
    ln = torch.nn.LayerNorm(1024)
    ops: dict[str, Callable[[], object]] = {
        "matmul": lambda: a @ a,
        "softmax": lambda: torch.softmax(x, -1),
        "mlp": lambda: torch.relu(b @ w1) @ w2,
        "layernorm": lambda: ln(rows),
    }
    rng = np.random.default_rng(0)
    pa, pv = rng.standard_normal((64, 64)), rng.standard_normal(1 << 16)
    pout = np.empty_like(pv)

    def probe() -> None:
        pa @ pa
        np.multiply(pv, 1.0001, out=pout)
        s = 0
        for i in range(300):
            s += i * i

    def timed(f: Callable[[], object], n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            f()
        return (time.perf_counter() - t) / n

    iters = {}
    for name, f in [*ops.items(), ("probe", probe)]:
        for _ in range(20):
            f()
        iters[name] = max(1, int((1e-3 if name == "probe" else 2e-3) / timed(f, 5)))
    raw: dict[str, list[float]] = {k: [] for k in ops}
    ratio: dict[str, list[float]] = {k: [] for k in ops}
    with torch.no_grad():
        for _ in range(slices):
            for name, f in ops.items():
                for _ in range(10):
                    t = timed(f, iters[name])
                    p = timed(probe, iters["probe"])
                    raw[name].append(t)
                    ratio[name].append(t / p)
    return {k: (statistics.median(raw[k]), statistics.median(ratio[k])) for k in ops}


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        res = one_invocation()
        print(" ".join(f"{k}={r:.6e},{q:.6f}" for k, (r, q) in res.items()))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=6)
    args = parser.parse_args()
    per: dict[str, list[tuple[float, float]]] = {}
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, check=True)
        for item in out.stdout.split():
            k, v = item.split("=")
            r, q = v.split(",")
            per.setdefault(k, []).append((float(r), float(q)))
    print(f"{args.runs} invocations\n")
    print("| op | raw medians (ms) | raw max/min - 1 | probe-normalised | normalised max/min - 1 |")
    print("| --- | --- | --- | --- | --- |")
    for k, vals in per.items():
        raw = [v[0] * 1e3 for v in vals]
        q = [v[1] for v in vals]
        print(f"| {k} | {', '.join(f'{x:.3f}' for x in raw)} | {max(raw) / min(raw) - 1:.1%} "
              f"| {', '.join(f'{x:.2f}' for x in q)} | {max(q) / min(q) - 1:.1%} |")  # fmt: skip


if __name__ == "__main__":
    main()
