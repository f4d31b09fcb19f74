"""Tiny pure-Python workloads for integration tests (no torch: fast worker start)."""

import perfci

FAST = {"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.03, "min_sample_s": 0.0005}


@perfci.workload(params={"n": [200, 400]}, timing=FAST)
def summing(ctx, n):
    data = list(range(n))
    ctx.bytes = 8.0 * n
    return lambda: sum(data)
