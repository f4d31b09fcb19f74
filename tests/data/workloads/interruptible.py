"""Two cases for the interruption test: one quick, one that spins for two minutes in a call once the test has
created `<PERFCI_TEST_SPIN_MARK>.go` (it creates `<mark>.spinning` first, so the test knows when to signal)."""

import os
import time

import perfci

FAST = {"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.03, "min_sample_s": 0.0005}
MARK = os.environ.get("PERFCI_TEST_SPIN_MARK", "")


@perfci.workload(timing=FAST)
def quick(ctx):
    data = list(range(100))
    return lambda: sum(data)


@perfci.workload(timing=FAST)
def busy(ctx):
    def spin():
        if MARK and os.path.exists(MARK + ".go"):
            open(MARK + ".spinning", "w").close()
            end = time.perf_counter() + 120  # busy, not sleeping: an orphaned worker would burn CPU this long
            while time.perf_counter() < end:
                pass

    return spin
