"""Where the profiled slice of the device clock spends its wall time (docs/gpu.md, "Held-out bars on the H200").

The held-out A/B of 2026-12-05 spent 1.3-4.1 s per case in the profiled slice (`worker_phases_s.device_slice`)
for 60 calls of 1-2 ms: the calls are not the cost. This runs, in a fresh process per way, the slices of the
held-out models (benchmarks/gpu_heldout.py) three times each and prints each step's wall time, the events the
profiler handed back and the median device time per call:
  profile:  torch.profiler.profile with every host op recorded (perfci's slice until 2026-12-05), step by step;
  scoped:   perfci's slice as it is (profilers/kineto.take_slice: only its call markers on the host).

    python3 benchmarks/gpu_heldout.py models 0 > /tmp/models.py
    python3 benchmarks/gpu_slice_cost.py /tmp/models.py [WAY...]   # device machine; one line per slice
"""

from __future__ import annotations

import subprocess
import sys

CHILD = r"""
import importlib.util, sys, time
t_start = time.perf_counter()
import torch
from perfci.profilers import kineto
from perfci.profilers.device_time import CUPTI, calls, summarize
from perfci.workloads.api import WorkloadContext
way, path = sys.argv[1], sys.argv[2]
if not torch.cuda.is_available():  # a smoke test of this script on a CPU (no device clock: medians are nan)
    torch.cuda.synchronize = lambda: None
spec = importlib.util.spec_from_file_location("models", path)
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
ctx = WorkloadContext(device="cuda" if torch.cuda.is_available() else "cpu", params={}, seed=0)
fns = {name: getattr(mod, name)(ctx) for name in ("opt125m", "convnext_tiny")}
for fn in fns.values():
    for _ in range(10):
        fn()
torch.cuda.synchronize()
print(f"{way}: set-up {time.perf_counter() - t_start:.2f} s", flush=True)
counted = []
real_read = kineto.read_events
def read(events, warm):
    counted.append(len(events))
    return real_read(events, warm)
kineto.read_events = read

def profile_way(fn, n):
    from torch.profiler import ProfilerActivity, profile, record_function
    steps = {}
    t = time.perf_counter()
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    prof.__enter__(); steps["profiler_start"] = time.perf_counter() - t; t = time.perf_counter()
    for i in range(kineto.WARM_CALLS + n):
        with record_function(f"{kineto.MARK}{i}"):
            fn()
        torch.cuda.synchronize()
    steps["calls"] = time.perf_counter() - t; t = time.perf_counter()
    prof.__exit__(None, None, None); steps["profiler_stop"] = time.perf_counter() - t; t = time.perf_counter()
    events = list(prof.profiler.kineto_results.events())
    w, o, a = read(events, kineto.WARM_CALLS)
    d = summarize(calls(w, o, a), CUPTI); steps["read"] = time.perf_counter() - t
    return d, steps

def scoped_way(fn, n):
    steps = {}
    return kineto.read_slice(kineto.take_slice(torch, fn, n, steps=steps), steps), steps

WAYS = {"profile": profile_way, "scoped": scoped_way}
for rep in range(3):
    for name, fn in fns.items():
        t0 = time.perf_counter()
        d, steps = WAYS[way](fn, 30)
        total = time.perf_counter() - t0
        med = sorted(d.samples)[len(d.samples) // 2] * 1e6 if d else float("nan")
        shown = " ".join(f"{k}={v:.3f}" for k, v in steps.items())
        line = f"{way} rep{rep} {name}: total {total:.3f} s, {counted[-1]} events, median {med:.1f} us | {shown}"
        print(line, flush=True)
"""


def main(models: str, chosen: list[str]) -> None:
    for way in ("profile", "scoped"):
        if not chosen or way in chosen:
            subprocess.run([sys.executable, "-c", CHILD, way, models], check=False)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
