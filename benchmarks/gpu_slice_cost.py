"""Where the profiled slice of the device clock spends its wall time (docs/gpu.md, "Held-out bars on the H200").

The held-out A/B of 2026-12-05 spent 1.3-4.1 s per case in the profiled slice (`worker_phases_s.device_slice`)
for 32 calls of 1-2 ms: the calls are not the cost. This runs, in a fresh process per way, the slices of the
held-out models (benchmarks/gpu_heldout.py) three times each and prints each step's wall time:
  profile:  perfci's profiled slice (profilers/kineto.profile_device), timed step by step;
  raw:      the same calls and events through torch's profiler entry points without the `torch.profiler.profile`
            wrapper (prepare, enable, disable), to see what the wrapper adds;
  scoped:   raw, with only user-scope ranges recorded on the host (perfci's call markers, no aten ops);
  autograd: torch.autograd.profiler.profile (the object the wrapper builds), without the wrapper;
  cuda-only: CUDA activities only (no host ops recorded), calls told apart by the synchronize after each;
  *-keep:   with TEARDOWN_CUPTI=0 (Kineto keeps CUPTI attached between sessions instead of tearing it
            down after each and setting it up again for the next).

    python3 benchmarks/gpu_heldout.py models 0 > /tmp/models.py
    python3 benchmarks/gpu_slice_cost.py /tmp/models.py [WAY...]   # device machine; one line per slice
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

def scoped_way(fn, n):
    return raw_way(fn, n, user_scope=True)

def raw_way(fn, n, user_scope=False):
    from torch.autograd.profiler import _disable_profiler, _enable_profiler, _prepare_profiler
    from torch._C._profiler import ProfilerActivity, ProfilerConfig, ProfilerState, _ExperimentalConfig
    steps = {}
    acts = {ProfilerActivity.CPU, ProfilerActivity.CUDA}
    cfg = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False, _ExperimentalConfig())
    t = time.perf_counter()
    _prepare_profiler(cfg, acts); steps["prepare"] = time.perf_counter() - t; t = time.perf_counter()
    from torch._C._profiler import RecordScope
    scopes = {RecordScope.USER_SCOPE} if user_scope else set()
    _enable_profiler(cfg, acts, scopes); steps["enable"] = time.perf_counter() - t; t = time.perf_counter()
    run_calls(fn, n); steps["calls"] = time.perf_counter() - t; t = time.perf_counter()
    res = _disable_profiler(); steps["disable"] = time.perf_counter() - t; t = time.perf_counter()
    events = list(res.events()); steps["events"] = time.perf_counter() - t; t = time.perf_counter()
    w, o, a = read_events(events, WARM_CALLS); steps["read"] = time.perf_counter() - t; t = time.perf_counter()
    d = summarize(calls(w, o, a), CUPTI); steps["summarize"] = time.perf_counter() - t
    return d, steps, len(events)

def autograd_way(fn, n):
    from torch.autograd import profiler as ap
    steps = {}
    t = time.perf_counter()
    prof = ap.profile(use_cpu=True, use_device="cuda", use_kineto=True)
    prof.__enter__(); steps["enter"] = time.perf_counter() - t; t = time.perf_counter()
    run_calls(fn, n); steps["calls"] = time.perf_counter() - t; t = time.perf_counter()
    prof.__exit__(None, None, None); steps["exit"] = time.perf_counter() - t; t = time.perf_counter()
    events = list(prof.kineto_results.events()); steps["events"] = time.perf_counter() - t; t = time.perf_counter()
    w, o, a = read_events(events, WARM_CALLS); steps["read"] = time.perf_counter() - t; t = time.perf_counter()
    d = summarize(calls(w, o, a), CUPTI); steps["summarize"] = time.perf_counter() - t
    return d, steps, len(events)

def cuda_only_way(fn, n):
    from collections import Counter
    from torch.autograd.profiler import _disable_profiler, _enable_profiler, _prepare_profiler
    from torch._C._profiler import ProfilerActivity, ProfilerConfig, ProfilerState, _ExperimentalConfig
    from perfci.profilers.device_time import Activity, Window
    steps = {}
    acts = {ProfilerActivity.CUDA}
    cfg = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False, _ExperimentalConfig())
    t = time.perf_counter()
    _prepare_profiler(cfg, acts); _enable_profiler(cfg, acts); steps["start"] = time.perf_counter() - t
    t = time.perf_counter()
    for i in range(WARM_CALLS + n):
        fn()
        torch.cuda.synchronize()
    steps["calls"] = time.perf_counter() - t; t = time.perf_counter()
    res = _disable_profiler(); steps["disable"] = time.perf_counter() - t; t = time.perf_counter()
    events = list(res.events()); steps["events"] = time.perf_counter() - t; t = time.perf_counter()
    kinds = Counter((str(e.device_type()).split(".")[-1], e.name()[:24]) for e in events)
    host = [e for e in events if "CUDA" not in str(e.device_type()).upper()]
    syncs = sorted(e.end_ns() for e in host if "ynchronize" in e.name())
    gpu = [e for e in events if "CUDA" in str(e.device_type()).upper() and not e.is_user_annotation()]
    edges = [0] + syncs
    windows = [Window(i, edges[i], edges[i + 1]) for i in range(WARM_CALLS, len(edges) - 1)]
    acts_ = [Activity(e.name(), e.start_ns(), e.end_ns(), 0) for e in gpu]
    steps["read"] = time.perf_counter() - t; t = time.perf_counter()
    d = summarize(calls(windows, [], acts_), CUPTI); steps["summarize"] = time.perf_counter() - t
    if not getattr(cuda_only_way, "shown", False):
        cuda_only_way.shown = True
        print("cuda-only event kinds:", kinds.most_common(12), "syncs", len(syncs), "gpu", len(gpu), flush=True)
    return d, steps, len(events)

WAYS = {"profile": profile_way, "raw": raw_way, "scoped": scoped_way}
WAYS.update({"autograd": autograd_way, "cuda-only": cuda_only_way})
for rep in range(3):
    for name, fn in fns.items():
        t0 = time.perf_counter()
        d, steps, n_events = WAYS[way.removesuffix("-keep")](fn, 30)
        total = time.perf_counter() - t0
        med = sorted(d.samples)[len(d.samples) // 2] * 1e6 if d else float("nan")
        shown = " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in steps.items())
        line = f"{way} rep{rep} {name}: total {total:.3f} s, {n_events} events, median {med:.1f} us | {shown}"
        print(line, flush=True)
"""


def main(models: str, chosen: list[str]) -> None:
    import os

    keep = {**os.environ, "TEARDOWN_CUPTI": "0"}  # Kineto leaves CUPTI attached between profiling sessions
    ways = (("profile", None), ("scoped", None), ("autograd", None), ("raw", None), ("cuda-only", None))
    ways += (("profile-keep", keep),)
    for way, env in ways:
        if not chosen or way in chosen:
            subprocess.run([sys.executable, "-c", CHILD, way, models], check=False, env=env)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
