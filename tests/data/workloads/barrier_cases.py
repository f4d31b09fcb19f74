"""A workload whose set-up waits until a given number of worker processes are setting it up at the same time (a
barrier of files in the folder named by PERFCI_TEST_BARRIER): set-ups run one after the other never pass it and
fail. The lockstep test of blocks of pairs whose workers start together (perfci/engine/lockstep.py)."""

import os
import time
from pathlib import Path

import perfci

FAST = {"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.05, "min_sample_s": 0.0005}


@perfci.workload(timing=FAST)
def together(ctx):
    folder = Path(os.environ["PERFCI_TEST_BARRIER"])
    want = int(os.environ["PERFCI_TEST_BARRIER_N"])
    (folder / str(os.getpid())).touch()
    deadline = time.monotonic() + 60.0
    while len(list(folder.iterdir())) < want:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(list(folder.iterdir()))} of {want} set-ups ran at once")
        time.sleep(0.01)
    ctx.notes["setting_up_together"] = want
    data = list(range(300))
    return lambda: sum(data)
