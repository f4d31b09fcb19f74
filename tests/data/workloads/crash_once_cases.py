"""A healthy workload, and one that crashes its worker in set-up once only: the first process to create the file
named by PERFCI_TEST_CRASH_ONCE crashes, every later one sets up fine. The lockstep test of a lost worker in a
block of pairs (perfci/engine/lockstep.py)."""

import ctypes
import os

import perfci

FAST = {"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.05, "min_sample_s": 0.0005}


@perfci.workload(params={"n": [300]}, timing=FAST)
def healthy(ctx, n):
    data = list(range(n))
    return lambda: sum(data)


@perfci.workload(timing=FAST)
def crashes_once(ctx):
    try:
        with open(os.environ["PERFCI_TEST_CRASH_ONCE"], "x"):
            pass
    except FileExistsError:
        return lambda: None
    ctypes.string_at(0)
