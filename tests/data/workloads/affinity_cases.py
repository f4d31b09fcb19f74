"""A workload that notes which CPUs its worker may run on during set-up and during its timed calls (the lockstep
test of perfci/engine/worker.py `_pin`)."""

import os

import perfci

FAST = {"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.05, "min_sample_s": 0.0005}


@perfci.workload(timing=FAST)
def where(ctx):
    ctx.notes["setup_cpus"] = sorted(os.sched_getaffinity(0))
    data = list(range(300))

    def call():
        ctx.notes["call_cpus"] = sorted(os.sched_getaffinity(0))
        return sum(data)

    return call
