"""Six cheap pure-Python cases, for listing and splitting (no torch)."""

import perfci

FAST = {"warmup_s": 0.002, "min_samples": 3, "budget_s": 0.01, "min_sample_s": 0.0005}


@perfci.workload(params={"n": [1, 2, 3, 4, 5, 6]}, timing=FAST)
def tiny(ctx, n):
    data = list(range(100 * n))
    return lambda: sum(data)
