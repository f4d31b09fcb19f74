"""Workloads for the lockstep tests: a healthy one, one that crashes the worker in set-up, one that raises
only once sampling is under way."""

import ctypes
import time

import perfci

FAST = {"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.05, "min_sample_s": 0.0005}


@perfci.workload(params={"n": [300]}, timing=FAST)
def healthy(ctx, n):
    data = list(range(n))
    return lambda: sum(data)


@perfci.workload(timing=FAST)
def crashes(ctx):
    ctypes.string_at(0)


@perfci.workload(timing=FAST)
def fails_late(ctx):
    start = time.perf_counter()

    def call():
        if time.perf_counter() - start > 0.02:
            raise RuntimeError("late failure")

    return call
