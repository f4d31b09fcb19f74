"""Where the profiled slice of the device clock spends its wall time (docs/gpu.md, "What a pair costs").

The held-out A/B of 2026-12-05 spent 1.3-4.1 s per case in the profiled slice (`worker_phases_s.device_slice`)
for 32 calls of 1-2 ms: the calls are not the cost. This runs, in a fresh process per way, the slices of the
held-out models (benchmarks/gpu_heldout.py) three times each and prints each step's wall time:
  profile:  perfci's profiled slice (profilers/kineto.profile_device), timed step by step;
  raw:      the same calls and events through torch's profiler entry points without the `torch.profiler.profile`
            wrapper (prepare, enable, disable), to see what the wrapper adds;
  *-keep:   either, with TEARDOWN_CUPTI=0 (Kineto keeps CUPTI attached between sessions instead of tearing it
            down after each and setting it up again for the next).

    python3 benchmarks/gpu_heldout.py models 0 > /tmp/models.py
    python3 benchmarks/gpu_slice_cost.py /tmp/models.py        # device machine; prints one line per slice
"""

from __future__ import annotations

import subprocess
import sys

CHILD = r"""
import importlib.util, json, sys, time
t_start = time.perf_counter()
import torch
from perfci.profilers.kineto import MARK, read_events, WARM_CALLS
from perfci.profilers.device_time import CUPTI, calls, summarize
from perfci.workloads.api import WorkloadContext
way, path = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("models", path)
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
ctx = WorkloadContext(device="cuda", params={}, seed=0)
fns = {name: getattr(mod, name)(ctx) for name in ("opt125m", "convnext_tiny")}
for fn in fns.values():
    for _ in range(10):
        fn()
torch.cuda.synchronize()
print(f"{way}: set-up {time.perf_counter() - t_start:.2f} s", flush=True)

def run_calls(fn, n):
    from torch.profiler import record_function
    for i in range(WARM_CALLS + n):
        with record_function(f"{MARK}{i}"):
            fn()
        torch.cuda.synchronize()

def profile_way(fn, n):
    from torch.profiler import ProfilerActivity, profile
    steps = {}
    t = time.perf_counter()
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    prof.__enter__(); steps["enter"] = time.perf_counter() - t; t = time.perf_counter()
    run_calls(fn, n); steps["calls"] = time.perf_counter() - t; t = time.perf_counter()
    prof.__exit__(None, None, None); steps["exit"] = time.perf_counter() - t; t = time.perf_counter()
    events = list(prof.profiler.kineto_results.events())
    steps["events"] = time.perf_counter() - t; t = time.perf_counter()
    w, o, a = read_events(events, WARM_CALLS); steps["read"] = time.perf_counter() - t; t = time.perf_counter()
    d = summarize(calls(w, o, a), CUPTI); steps["summarize"] = time.perf_counter() - t
    st = prof.profiler._stats
    steps["torch_prepare_enable_disable_us"] = (
        st.profiler_prepare_call_duration_us, st.profiler_enable_call_duration_us, st.profiler_disable_call_duration_us
    )
    return d, steps, len(events)

def raw_way(fn, n):
    from torch.autograd.profiler import _disable_profiler, _enable_profiler, _prepare_profiler
    from torch._C._profiler import ProfilerActivity, ProfilerConfig, ProfilerState, _ExperimentalConfig
    steps = {}
    acts = {ProfilerActivity.CPU, ProfilerActivity.CUDA}
    cfg = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False, _ExperimentalConfig())
    t = time.perf_counter()
    _prepare_profiler(cfg, acts); steps["prepare"] = time.perf_counter() - t; t = time.perf_counter()
    _enable_profiler(cfg, acts); steps["enable"] = time.perf_counter() - t; t = time.perf_counter()
    run_calls(fn, n); steps["calls"] = time.perf_counter() - t; t = time.perf_counter()
    res = _disable_profiler(); steps["disable"] = time.perf_counter() - t; t = time.perf_counter()
    events = list(res.events()); steps["events"] = time.perf_counter() - t; t = time.perf_counter()
    w, o, a = read_events(events, WARM_CALLS); steps["read"] = time.perf_counter() - t; t = time.perf_counter()
    d = summarize(calls(w, o, a), CUPTI); steps["summarize"] = time.perf_counter() - t
    return d, steps, len(events)

for rep in range(3):
    for name, fn in fns.items():
        t0 = time.perf_counter()
        d, steps, n_events = (profile_way if way.startswith("profile") else raw_way)(fn, 30)
        total = time.perf_counter() - t0
        med = sorted(d.samples)[len(d.samples) // 2] * 1e6 if d else float("nan")
        shown = " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in steps.items())
        line = f"{way} rep{rep} {name}: total {total:.3f} s, {n_events} events, median {med:.1f} us | {shown}"
        print(line, flush=True)
"""


def main(models: str) -> None:
    import os

    keep = {**os.environ, "TEARDOWN_CUPTI": "0"}  # Kineto leaves CUPTI attached between profiling sessions
    for way, env in (("profile", None), ("raw", None), ("profile-keep", keep), ("raw-keep", keep)):
        subprocess.run([sys.executable, "-c", CHILD, way, models], check=False, env=env)


if __name__ == "__main__":
    main(sys.argv[1])
