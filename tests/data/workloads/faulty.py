"""Workloads that fail in every way a worker can: raise, segfault, abort, exit, hang, eat memory."""

import ctypes
import os
import sys
import time

import perfci

FAST = {"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.03, "min_sample_s": 0.0005}


@perfci.workload(timing=FAST)
def raises(ctx):
    raise ValueError("bad shape 3x4")


@perfci.workload(timing=FAST)
def segfault(ctx):
    def crash():
        ctypes.string_at(0)

    return crash


@perfci.workload(timing=FAST)
def aborts(ctx):
    return os.abort


@perfci.workload(timing=FAST)
def exits(ctx):
    return lambda: sys.exit(4)


@perfci.workload(timing=FAST)
def hard_exits(ctx):
    return lambda: os._exit(0)


@perfci.workload(timing=FAST)
def hangs(ctx):
    def forever():
        while True:
            time.sleep(0.01)

    return forever


@perfci.workload(timing=FAST)
def eats_memory(ctx):
    hoard = []

    def grow():
        while True:
            hoard.append(bytearray(64 * 2**20))

    return grow


@perfci.workload(params={"n": [100]}, timing=FAST)
def healthy(ctx, n):
    data = list(range(n))
    return lambda: sum(data)


@perfci.workload(timing=FAST)
def needs_gpu(ctx):
    ctx.skip("no CUDA device on this runner")
