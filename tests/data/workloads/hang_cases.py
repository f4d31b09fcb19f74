"""A healthy workload and one whose set-up hangs: the lockstep test of a set-up that never ends in a block of pairs
(perfci/engine/lockstep.py): it is stopped after the case time-out."""

import time

import perfci

FAST = {"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.05, "min_sample_s": 0.0005}


@perfci.workload(timing=FAST)
def healthy(ctx):
    data = list(range(300))
    return lambda: sum(data)


@perfci.workload(timing=FAST)
def hangs(ctx):
    time.sleep(3600)
