"""Notes the CPUs its worker may run on and its malloc tunables, so tests can see `--cpus` and the worker
environment take effect (no torch: fast start)."""

import os

import perfci

FAST = {"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.03, "min_sample_s": 0.0005}


@perfci.workload(timing=FAST)
def where(ctx):
    ctx.notes["cpus"] = sorted(os.sched_getaffinity(0))
    ctx.notes["glibc_tunables"] = os.environ.get("GLIBC_TUNABLES")
    data = list(range(300))
    return lambda: sum(data)
