"""The true time factor of the injected-slowdown workload (common.WORKLOAD), measured without perfci.

In one process, the k = 100 work and the k = K work are called alternately (adjacent calls, coin-flip order)
8000 times; the median and 20%-trimmed mean of log(t_K / t_100) over the adjacent pairs give the time factor
that `perfci ab` should estimate. Usage: python benchmarks/quality/injected_truth.py [K ...] (default 103 110)
"""

from __future__ import annotations

import math
import os
import random
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np


def factor(k: int, pairs: int = 8000) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((32, 32)), rng.standard_normal((32, 32))

    def work(n: int) -> None:
        for _ in range(n):
            np.dot(a, b)

    for _ in range(300):
        work(100)
        work(k)
    coin = random.Random(k)
    d = []
    clock = time.perf_counter
    for _ in range(pairs):
        first_base = coin.random() < 0.5
        t0 = clock()
        work(100 if first_base else k)
        t1 = clock()
        work(k if first_base else 100)
        t2 = clock()
        base, other = (t1 - t0, t2 - t1) if first_base else (t2 - t1, t1 - t0)
        d.append(math.log(other / base))
    d.sort()
    g = len(d) // 5
    trimmed = d[g : len(d) - g]
    return math.expm1(d[len(d) // 2]), math.expm1(sum(trimmed) / len(trimmed))


def main() -> None:
    for k in [int(x) for x in sys.argv[1:]] or [103, 110]:
        med, trim = factor(k)
        print(f"k = {k} vs 100 (work x{k / 100:.2f}): time median {med:+.2%}, trimmed mean {trim:+.2%}")


if __name__ == "__main__":
    main()
