"""The CUPTI activity source of the device clock: a few calls profiled with torch.profiler (Kineto), read into
profilers/device_time.py's windows, host ops and activities.

Run in a slice after every latency sample of the worker (engine/case_session.finish), so profiling never
perturbs them. Each call runs inside a `record_function` marker and is followed by a synchronize; the first
`warm` calls are profiled but not kept (CUPTI may drop records at a session's start, and a first call may
allocate). The profiler is stopped when the slice ends; what Kineto keeps attached afterwards can only slow the
later cases' energy blocks, never their samples, which are all taken by then.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from perfci.format.model import DeviceTime
from perfci.profilers.device_time import CUPTI, Activity, HostOp, Window, calls, summarize

MARK = "perfci.call#"
# Within one process a call's device time spreads +-0.1-0.4% (H200: OPT-125m, ConvNeXt-Tiny), so the median of 15
# calls is expected within about 0.1% of the process's figure, below the spread from process to process (1.3% a
# pair for ConvNeXt-Tiny), which more calls do not reduce; each call profiled costs its host time
# (13 ms for a launch-bound OPT-125m), four slices a lockstep pair (docs/gpu.md, "Held-out bars on the H200").
MIN_CALLS, MAX_CALLS = 5, 15
SLICE_S = 0.5  # the profiled calls' time, at most (beyond MIN_CALLS)
WARM_CALLS = 2


def calls_for(per_call_s: float, factor: int = 1) -> int:
    """How many calls to profile for a call of `per_call_s`: as many as fit in SLICE_S, within the limits, each
    of them `factor` times larger (a case whose verdict rests on the device clock profiles more: its round takes
    fewer latency samples instead, engine/case_session.py)."""
    low, high = MIN_CALLS * factor, MAX_CALLS * factor
    if per_call_s <= 0:
        return high
    return max(low, min(high, int(SLICE_S * factor / per_call_s)))


def read_events(events: list[Any], warm: int) -> tuple[list[Window], list[HostOp], list[Activity]]:
    """Kineto events (`prof.profiler.kineto_results.events()`) as windows, host ops and GPU activities; the
    first `warm` calls' windows are left out."""
    windows: list[Window] = []
    op_starts: dict[int, list[int]] = {}
    acts: list[Activity] = []
    for e in events:
        name = e.name()
        on_gpu = "CUDA" in str(e.device_type()).upper()
        if name.startswith(MARK):
            if not on_gpu:  # the host range; its GPU-side twin (gpu_user_annotation) spans idle time too
                index = int(name[len(MARK) :])
                if index >= warm:
                    windows.append(Window(index, int(e.start_ns()), int(e.end_ns())))
            continue
        if on_gpu:
            if e.is_user_annotation():
                continue
            # linked: the correlation id of the host op (aten::addmm) the kernel's launch ran under
            acts.append(Activity(name, int(e.start_ns()), int(e.end_ns()), int(e.linked_correlation_id())))
        elif int(e.linked_correlation_id()) == 0 and not e.is_user_annotation():
            # a host op (runtime calls such as cudaLaunchKernel link to one, and number from another counter)
            op_starts.setdefault(int(e.correlation_id()), []).append(int(e.start_ns()))
    # an id two host events share (Kineto's own "Activity Buffer Request" took an op's) says nothing: those
    # activities are placed by their GPU start instead
    ops = [HostOp(c, starts[0]) for c, starts in op_starts.items() if len(starts) == 1]
    return windows, ops, acts


@dataclass
class Slice:
    """A profiled slice: its Kineto events, read from the profiler when it is stopped (`events`), and its warm
    calls. `stop` is the open profiler's stop until then; its time goes into `steps` (`profiler_stop`)."""

    warm: int
    stop: Callable[[], list[Any]] | None = None
    kept: list[Any] = field(default_factory=list)
    steps: dict[str, float] | None = None

    def events(self) -> list[Any]:
        """The slice's events, the profiler stopped first where it is still open."""
        if self.stop is not None:
            stop, self.stop = self.stop, None
            t0 = time.perf_counter()
            self.kept = stop()
            if self.steps is not None:
                self.steps["profiler_stop"] = time.perf_counter() - t0
        return self.kept


def take_slice(
    torch: Any,
    fn: Callable[[], object],
    n_calls: int,
    warm: int = WARM_CALLS,
    steps: dict[str, float] | None = None,
    keep_open: bool = False,
) -> Slice:
    """The GPU part of a device clock's slice: `warm + n_calls` calls of `fn` under the profiler (their device
    clock, of the last `n_calls`: `read_slice`). Where its wall time went is added to `steps` (seconds):
    `profiler_start`, `calls`, `profiler_stop`, then `read`. The profiler is stopped before it
    returns, or with `keep_open` when the events are first asked for (`Slice.events`, by `read_slice`): the stop
    (0.1-0.4 s on an H100 runner) then runs after the GPU is released, on the host only. With `keep_open` no other
    slice may be taken before that (one profiler session at a time).

    The host records user-scope ranges only (perfci's call markers), not every aten op: the kernels are placed in
    calls by their GPU start (each call ends with a synchronize, so a call's kernels start after its marker and
    before the next one's). A slice of 30 calls of OPT-125m (207 kernels a call) then hands Kineto 14,561 events
    instead of 54,242 and takes 0.40-0.57 s instead of 0.51-1.38 s on an H200 (benchmarks/gpu_slice_cost.py).
    torch's profiler entry points are used directly: `torch.profiler.profile` does not take record scopes, and
    its start imports `torch._inductor` (1.2 s on a CPU, once per worker). Where those entry points are missing
    (another torch), the slice falls back to `torch.profiler.profile` with every host op."""
    from torch.profiler import record_function

    spent = steps if steps is not None else {}
    session = _scoped_session() or _full_session
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    taken = Slice(warm, stop=session(), steps=spent)
    t1 = t2 = time.perf_counter()
    try:
        for i in range(warm + n_calls):
            with record_function(f"{MARK}{i}"):
                fn()
            torch.cuda.synchronize()
        t2 = time.perf_counter()
    except BaseException:
        taken.events()
        raise
    spent.update(profiler_start=t1 - t0, calls=t2 - t1, profiler_stop=0.0)
    if not keep_open:
        taken.events()
    return taken


def read_slice(taken: Slice, steps: dict[str, float] | None = None) -> DeviceTime | None:
    """The device clock of a slice's kept calls (None where they ran nothing on the GPU), the profiler stopped
    first where it is still open; the reading's time is `read` in `steps`."""
    events = taken.events()
    t0 = time.perf_counter()
    windows, ops, acts = read_events(events, taken.warm)
    device = summarize(calls(windows, ops, acts), CUPTI)
    if steps is not None:
        steps["read"] = time.perf_counter() - t0
    return device


Session = Callable[[], Callable[[], list[Any]]]  # starts profiling; returns the function that stops it (its events)


def _scoped_session() -> Session | None:
    """A Kineto session of CPU and CUDA activities whose host side records user-scope ranges only; None where
    this torch lacks the entry points."""
    try:
        from torch._C import _autograd
        from torch._C._profiler import (
            ProfilerActivity,
            ProfilerConfig,
            ProfilerState,
            RecordScope,
            _ExperimentalConfig,
        )

        prepare, enable, disable = _autograd._prepare_profiler, _autograd._enable_profiler, _autograd._disable_profiler
    except (ImportError, AttributeError):
        return None
    enable_scoped: Callable[..., None] = enable  # its stub leaves out the record scopes it takes

    def start() -> Callable[[], list[Any]]:
        activities = {ProfilerActivity.CPU, ProfilerActivity.CUDA}
        config = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False, _ExperimentalConfig())
        prepare(config, activities)
        enable_scoped(config, activities, {RecordScope.USER_SCOPE})
        return lambda: list(disable().events())

    return start


def _full_session() -> Callable[[], list[Any]]:
    """`torch.profiler.profile` with every host op (the fallback)."""
    from torch.profiler import ProfilerActivity, profile

    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    prof.start()

    def stop() -> list[Any]:
        prof.stop()
        assert prof.profiler is not None and prof.profiler.kineto_results is not None
        return list(prof.profiler.kineto_results.events())

    return stop
