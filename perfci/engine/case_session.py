"""One case inside a worker: set up, check, derive work, warm up and calibrate (`prepare`); sample in slices
(`CaseSession.sampler`); then the energy block, throttle rule, memory and teardown (`finish`)."""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import msgspec

from perfci.engine.protocol import Job, JobCase, Result
from perfci.format.model import DeviceTime, Round
from perfci.profilers import memory
from perfci.profilers.case_memory import case_memory, torch_for, warm_runtime
from perfci.profilers.contention import ContentionWatch
from perfci.profilers.cuda_timing import FLUSHING_MODES, SETTLING_MODES, cuda_timer
from perfci.profilers.device_time import (
    CLOCK_KEY,
    LEFT_OUT_KEY,
    MIN_STEADY_SAMPLES,
    STEADY_CALLS_FACTOR,
    STEADY_DEVICE,
    STEADY_SAMPLE_SHARE,
    THROTTLE_KEY,
)
from perfci.profilers.kineto import Slice, calls_for, read_slice, take_slice
from perfci.profilers.reference import REFERENCE_NAME, SpeedReference, open_reference, torch_matmul
from perfci.profilers.telemetry import (
    NvmlProbe,
    apply_throttle_rule,
    energy_block,
    open_probe,
    slice_throttle,
    summarize,
)
from perfci.profilers.timing import (
    BlockTimer,
    Sampler,
    Sustained,
    TimingSettings,
    calibrate,
    clock_block_timer,
    keep_busy,
    sustain,
    sustained_settings,
    timer_overhead,
    warm_up,
)
from perfci.profilers.work import resolve_work
from perfci.workloads.api import LocatedFailure, WorkloadContext
from perfci.workloads.discovery import find_workload


class CheckFailed(Exception):
    """The workload's correctness check rejected its output."""


@dataclass
class CaseSession:
    case_id: str
    ctx: WorkloadContext
    settings: TimingSettings
    sampler: Sampler
    threads: int
    mode: str
    timer_name: str
    warmup_s: float
    overhead_s: float
    peak_rss: int
    rss_before: int
    flops: float | None
    nbytes: float | None
    work_sources: dict[str, str]
    torch: Any | None
    probe: NvmlProbe | None
    faults: memory.FaultCount  # page faults inside the sampler's timed blocks
    reference: SpeedReference | None = None  # CPU torch cases: timed before each sample
    own_memory: dict[str, int] = field(default_factory=dict)  # profilers/case_memory.py: memory.host/device
    sustained: Sustained | None = None  # sustained GPU mode: the steady state reached before sampling
    block_timer: BlockTimer | None = None  # the timer under the sampler's (sustained-cold: counts host-bound blocks)
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    contention: ContentionWatch = field(default_factory=ContentionWatch)  # started when sampling starts
    steady: bool = False  # the verdict rests on the device clock: more profiled calls, fewer latency samples
    phases_s: dict[str, float] = field(default_factory=dict)  # the worker's time per step (PHASES_KEY)


def set_threads(threads: int) -> int:
    """Pin torch's intra-op threads when the workload uses torch (it is imported only then: it is slow)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return threads
    if threads > 0 and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return int(torch.get_num_threads())


THREADS_NOTE = "threads"


def _note_own_threads(ctx: WorkloadContext, wanted: int) -> None:
    """A set-up that set torch's thread count itself is measured at `--threads` (the run's setting, recorded with
    the results); the case's notes say so, rather than leaving it to be found."""
    torch = sys.modules.get("torch")
    if torch is None or wanted <= 0 or (own := int(torch.get_num_threads())) == wanted:
        return
    ctx.notes[THREADS_NOTE] = (
        f"the set-up set {own} torch threads; measured with {wanted} (--threads; 0 leaves the library's default)"
    )


def _require_cuda() -> Any:
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("a CUDA device was requested but torch.cuda.is_available() is False on this runner")
    return torch


def _device_index(device: str) -> int:
    return int(device.split(":", 1)[1]) if ":" in device else 0


def _run_check(ctx: WorkloadContext) -> None:
    if ctx.check is None:
        return
    try:
        ctx.check()
    except AssertionError as exc:
        raise CheckFailed(f"correctness check failed: {exc}") from None


def _timer(device: str, mode: str, torch: Any) -> tuple[BlockTimer, int | None, str]:
    if not device.startswith("cuda"):
        return clock_block_timer(time.perf_counter), None, "perf_counter"
    setup = cuda_timer(torch, mode)
    return setup.timer, setup.fixed_iterations, f"cuda_event/{mode}"


def _settle(
    fn: Callable[[], object], timer: BlockTimer, iterations: int, probe: NvmlProbe | None, settings: TimingSettings
) -> Sustained:
    """Sustained mode: run back to back until the SM clock and power (else the block time) stop drifting."""

    def read() -> dict[str, float | None]:
        snap = probe.snapshot() if probe is not None else {}
        return {k: snap.get(k) for k in ("sm_clock_mhz", "power_w")}

    return sustain(lambda: timer(fn, iterations), time.perf_counter, settings, read if probe is not None else None)


def prepare(case: JobCase, job: Job) -> CaseSession:
    """Everything before sampling. Raises on workload errors (the worker reports them)."""
    wl = find_workload(case.source, case.workload)
    threads = set_threads(job.threads)
    settings = TimingSettings(**{**job.timing, **wl.timing})
    ctx = WorkloadContext(device=case.device, params=dict(case.params), seed=job.seed)
    mode = str(ctx.params.get("gpu_mode", settings.gpu_mode))
    cuda = _require_cuda() if ctx.device.startswith("cuda") else None
    steady = cuda is not None and settings.device_clock and case.steady_clock == STEADY_DEVICE
    if steady:  # the round plan of a case decided on its device clock (profilers/device_time.rests_on_device)
        settings = steady_settings(settings)
    if cuda is not None:
        settings = pair_settings(settings, job)
    t0 = time.perf_counter()
    if cuda is not None:
        cuda.cuda.synchronize()
        cuda.cuda.reset_peak_memory_stats()
    runtime = torch_for(wl.setup)  # imported here when the set-up would import it: not the case's memory
    set_threads(job.threads)
    warm_runtime(runtime, ctx.device)  # lazy initialisation (thread pools, first kernels) is nobody's memory
    if wl.preload is not None:
        wl.preload(ctx.device, ctx.params)  # work shared by several cases is no one case's memory either
    own = case_memory(ctx.device)
    own.start()
    memory.reset_peak_rss()
    rss_before = memory.current_rss()
    fn: Callable[[], object] = wl(ctx, **ctx.params)
    _note_own_threads(ctx, job.threads)
    threads = set_threads(job.threads)  # again, before the first call: the set-up may have imported torch only now,
    t1 = time.perf_counter()  # or set its own count (its first call, the memory window, ran at that count)
    own.set_up()
    own.call(fn)  # the first call: its largest transient, before anything else allocates
    _run_check(ctx)
    torch = sys.modules.get("torch")
    flops, nbytes, sources = resolve_work(fn, ctx.flops, ctx.bytes, torch)
    timer, fixed, timer_name = _timer(ctx.device, mode, torch)
    clock = time.perf_counter
    t2 = clock()
    sustained = cuda is not None and mode in SETTLING_MODES
    if sustained:
        # blocks long enough that the GPU never idles between them (`sustain_block_s`), for the calibration,
        # the settling, the running before each slice and the samples alike
        settings = sustained_settings(settings)
    warm = warm_up(fn, clock, settings)
    overhead = timer_overhead(clock)
    iterations = fixed or calibrate(fn, timer, overhead, settings)
    probe = open_probe(_device_index(ctx.device)) if cuda is not None else None
    settled = None
    if sustained:
        settled = _settle(fn, timer, iterations, probe, settings)
        iterations = calibrate(fn, timer, overhead, settings)  # at the steady state's clock
    faults = memory.FaultCount()
    session = CaseSession(
        case_id=case.id,
        ctx=ctx,
        settings=settings,
        sampler=Sampler(fn, faults.wrap(timer), clock, iterations, settings),
        threads=threads,
        mode=mode,
        timer_name=timer_name,
        warmup_s=warm,
        overhead_s=overhead,
        peak_rss=memory.peak_rss(),
        rss_before=rss_before,
        flops=flops,
        nbytes=nbytes,
        work_sources=sources,
        torch=cuda,
        probe=probe,
        faults=faults,
        own_memory=own.telemetry(),
        sustained=settled,
        block_timer=timer,
        steady=steady,
        phases_s={"set_up": t1 - t0, "first_call_and_work": t2 - t1, "calibration": clock() - t2},
    )
    if settled is not None:
        busy = settings.sustain_window_s / 4
        session.sampler.before_slice = lambda: keep_busy(lambda: timer(fn, iterations), clock, busy)
    if probe is not None:
        session.sampler.before_sample = lambda: session.snapshots.append(probe.snapshot())
    elif torch is not None and cuda is None and settings.speed_reference and not job.lockstep:
        # not in lockstep (A/B) jobs: the pairs already cancel the machine's drift
        session.reference = open_reference(torch_matmul(torch, seed=session.ctx.seed), timer, overhead, settings)
        session.sampler.before_sample = session.reference.sample
    session.contention.start()
    return session


# Round.telemetry of a CUDA case (and of a lockstep worker's first case): where its worker's time went, by step
# (seconds); a lockstep worker's first case adds the worker's own start: `preload` (its imports) and
# `waited_for_job` (idle until its pair's job came: near 0 when the pair waited for those imports)
PHASES_KEY = "worker_phases_s"
SLICE_STEPS_KEY = "device_slice_steps_s"  # Round.telemetry: the profiled slice's wall time by step (kineto.py)
SLICE_TRIES = 2  # a slice taken while the GPU was throttled (thermal or hardware slowdown) is taken again once


def pair_settings(settings: TimingSettings, job: Job) -> TimingSettings:
    """A CUDA case in an A/B's lockstep pairs takes its energy block (0.5 s back to back) in the first pair only:
    an A/B compares no energy row, the first pair's figure is each side's energy per call in its results, and in
    later pairs the block was a sixth of the pair's time (docs/gpu.md, "Where a pair's time goes")."""
    if job.lockstep and job.round_index > 0:
        return replace(settings, energy_window_s=0.0)
    return settings


def steady_settings(settings: TimingSettings) -> TimingSettings:
    """A round of a case decided on its device clock takes fewer latency samples (its profiled slice takes
    more calls instead, `_device_slice`)."""
    least = max(
        1, min(settings.min_samples, max(MIN_STEADY_SAMPLES, round(settings.min_samples * STEADY_SAMPLE_SHARE)))
    )
    return replace(settings, budget_s=settings.budget_s * STEADY_SAMPLE_SHARE, min_samples=least)


def _device_slice(
    s: CaseSession,
    samples: tuple[float, ...],
    telemetry: dict[str, Any],
    steps: dict[str, float],
    keep_open: bool = False,
) -> Slice | None:
    """The GPU part of the device clock: a profiled slice after every sample of the worker (profilers/kineto.py),
    with the SM clock and the clock-event (throttle) reasons read before and after it; read later, on the host
    only (`_read_device`). A slice during a thermal or hardware slowdown is taken again once; if that one is
    throttled too, the round's device clock is left out and the telemetry says why (`device_clock_left_out`).
    Where the profiler cannot run, a note says why and the round has no device clock. `keep_open`: the kept
    slice's profiler is stopped when it is read (`kineto.take_slice`)."""
    per_call = sorted(samples)[len(samples) // 2] / s.sampler.iterations if samples else 0.0
    n = calls_for(per_call, STEADY_CALLS_FACTOR if s.steady else 1)
    drop: list[str] = []
    for _ in range(SLICE_TRIES):
        before = _snapshot(s.probe)
        try:
            taken = take_slice(s.torch, s.sampler.fn, n, steps=steps, keep_open=keep_open)
        except Exception as exc:
            telemetry.setdefault("notes", {})["device_clock"] = f"not measured: {type(exc).__name__}: {exc}"[:300]
            return None
        after = _snapshot(s.probe)
        seen, drop = slice_throttle(before, after)
        if not drop:
            break
        taken.events()  # a throttled slice's profiler is stopped before the next try, or for good
    clocks = [_mhz(before), _mhz(after)]
    if None not in clocks:
        telemetry[CLOCK_KEY] = clocks  # the SM clock before and after the profiled calls
    if seen:
        telemetry[THROTTLE_KEY] = seen
    if drop:
        telemetry[LEFT_OUT_KEY] = f"the GPU was throttled around the profiled calls ({', '.join(drop)})"
        telemetry.setdefault("notes", {})["device_clock"] = f"left out: {telemetry[LEFT_OUT_KEY]}"
        _record_steps(telemetry, steps)
        return None
    return taken


def _read_device(taken: Slice | None, telemetry: dict[str, Any], steps: dict[str, float]) -> DeviceTime | None:
    """A slice's device clock, read on the host; the slice's time by step goes into the telemetry."""
    if taken is None:
        return None
    try:
        device = read_slice(taken, steps)
    except Exception as exc:
        telemetry.setdefault("notes", {})["device_clock"] = f"not read: {type(exc).__name__}: {exc}"[:300]
        device = None
    if device is None and "device_clock" not in telemetry.get("notes", {}):
        telemetry.setdefault("notes", {})["device_clock"] = "not measured: the profiled calls ran nothing on the GPU"
    _record_steps(telemetry, steps)
    return device


def _record_steps(telemetry: dict[str, Any], steps: dict[str, float]) -> None:
    if steps:
        telemetry[SLICE_STEPS_KEY] = {k: round(v, 4) for k, v in steps.items()}  # the last try's time per step


def _snapshot(probe: NvmlProbe | None) -> dict[str, Any]:
    return probe.snapshot() if probe is not None else {}


def _mhz(snapshot: dict[str, Any]) -> float | None:
    value = snapshot.get("sm_clock_mhz")
    return float(value) if isinstance(value, int | float) else None


def checked_notes(notes: dict[str, Any]) -> dict[str, Any]:
    """The workload's notes, refused (TypeError, the case's error) where one is not JSON serializable: it would
    otherwise fail the worker's result message with no word of which note."""
    for key, value in notes.items():
        try:
            msgspec.json.encode(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise TypeError(
                f"ctx.notes[{key!r}] is not JSON serializable ({type(value).__name__}: {exc}); record text, "
                "numbers, lists or dicts of them"
            ) from None
    return dict(notes)


@dataclass
class Finishing:
    """A case's finish after its GPU part (`finish_on_gpu`): the telemetry so far, the samples the throttle rule
    kept, the profiled slice not read yet, and the GPU part's time by step."""

    telemetry: dict[str, Any]
    samples: tuple[float, ...]
    taken: Slice | None
    steps: dict[str, float]
    slice_s: float
    energy_s: float


def finish_on_gpu(s: CaseSession, last: bool = False) -> Finishing:
    """The part of a case's finish that uses the GPU: the device clock's profiled slice, then the energy block
    and the throttle rule. What is left (`finish`) runs on the host only, so that in an A/B's lockstep pair the
    other side may take the GPU meanwhile (engine/lockstep.finish_pair). `last`: no other case of the worker
    takes a slice after this one, so its profiler is stopped in `finish` unless an energy block follows."""
    sampler = s.sampler
    telemetry: dict[str, Any] = {
        "timer_overhead_s": s.overhead_s,
        "timer": s.timer_name,
        "work_sources": s.work_sources,
        **s.contention.stop(),  # the sampling's CPU contention; the energy block below is not sampling
    }
    if s.ctx.notes:
        telemetry["notes"] = checked_notes(s.ctx.notes)
    samples = tuple(sampler.samples)
    # the device clock's slice first: right after the samples, before the energy block heats the GPU (seen on
    # the H200: a slice after it read one BERT round 8% slower)
    steps: dict[str, float] = {}
    energy = s.probe is not None and bool(s.snapshots) and s.settings.energy_window_s > 0
    t0 = time.perf_counter()
    slice_on = s.torch is not None and s.settings.device_clock
    taken = _device_slice(s, samples, telemetry, steps, keep_open=last and not energy) if slice_on else None
    t1 = time.perf_counter()
    if s.probe is not None and s.snapshots:
        start, end, calls = s.snapshots[0], s.snapshots[-1], 0
        if s.mode not in FLUSHING_MODES and s.settings.energy_window_s > 0:  # a flush's energy is not the call's
            start, end, calls = energy_block(
                s.probe,
                lambda n: sampler.timer(sampler.fn, n),
                sampler.iterations,
                s.settings.energy_window_s,
                time.perf_counter,
            )
        telemetry.update(summarize(s.snapshots, start, end, calls))
        samples, flagged, dropped = apply_throttle_rule(samples, s.snapshots, s.settings.min_samples)
        telemetry.update(throttle_flagged=flagged, throttle_dropped=dropped)
    return Finishing(telemetry, samples, taken, steps, t1 - t0, time.perf_counter() - t1)


def _tear_down(teardown: object) -> None:
    """The workload's `ctx.teardown`, whose failure is said as its own (a teardown that raised read as the
    workload's error, with the round's samples gone and no word of why; `ctx.teardown = 5` as "'int' object is not
    callable (at case_session.py)")."""
    if not callable(teardown):
        raise LocatedFailure(f"ctx.teardown = {teardown!r:.40} is not callable; set it to a function of no arguments.")
    try:
        teardown()
    except Exception as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        raise LocatedFailure(
            f"its teardown raised {type(exc).__name__}: {exc} (at {os.path.basename(frame.filename)}:{frame.lineno});"
            " the round's samples are not kept: a clean-up that failed may leave state the next case would carry"
        ) from exc


def finish(s: CaseSession, part: Finishing | None = None) -> Result:
    """The result event: the GPU part (`finish_on_gpu`, taken now unless given), then the slice read, memory,
    teardown."""
    sampler = s.sampler
    part = part if part is not None else finish_on_gpu(s)
    telemetry, samples = part.telemetry, part.samples
    t0 = time.perf_counter()
    device = _read_device(part.taken, telemetry, part.steps)
    read_s = time.perf_counter() - t0
    if s.torch is not None or "preload" in s.phases_s:  # a CUDA case, or a lockstep worker's first case
        telemetry[PHASES_KEY] = {**s.phases_s, "device_slice": part.slice_s + read_s, "energy_block": part.energy_s}
    telemetry["minor_faults_per_call"] = s.faults.per_call()
    telemetry.update(s.own_memory)
    if s.sustained is not None:
        telemetry["sustained"] = s.sustained.telemetry()
        host_bound = getattr(s.block_timer, "host_bound_blocks", None)
        if host_bound is not None:  # sustained-cold: blocks (settling included) the GPU may have waited inside
            telemetry["sustained"]["host_bound_blocks"] = host_bound
    if s.probe is not None and (nvml_bytes := s.probe.process_memory(os.getpid())) is not None:
        telemetry["nvml_process_bytes"] = nvml_bytes
    if s.reference is not None and s.reference.per_call:
        telemetry.update(reference=REFERENCE_NAME, reference_per_call_s=list(s.reference.per_call))
    peak_device = int(s.torch.cuda.max_memory_allocated()) if s.torch is not None else None
    if s.ctx.teardown is not None:
        _tear_down(s.ctx.teardown)
    measured = Round(
        index=0,
        pid=os.getpid(),
        iterations=sampler.iterations,
        samples=samples,
        warmup_s=s.warmup_s,
        stop_reason=sampler.stop_reason or "budget",
        threads=s.threads,
        peak_rss_bytes=s.peak_rss,
        rss_increase_bytes=max(0, s.peak_rss - s.rss_before),
        peak_device_bytes=peak_device,
        telemetry=telemetry,
        device=device,
    )
    return Result(case=s.case_id, flops=s.flops, bytes=s.nbytes, measured=measured)
