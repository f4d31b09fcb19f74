"""Shared test fakes: clocks, GPUs (a fake `torch` with `torch.cuda`) and NVML, so timing, GPU timing and
telemetry code runs on any machine, fast and deterministic, with no sleeps and no device.

- Clocks: `FakeClock` (a workload of fixed, optionally noisy cost), `DriftingClock` (the machine's speed changes
  between rounds).
- GPU: `FakeGpu` with `fake_torch` (synchronous: records the order of operations), `AsyncGpu` with `async_torch`
  (the stream runs apart from the host, so launch latency can leak into a timed region).
- NVML: `FakeNvml`, a pynvml module with fixed readings and a scripted sequence of throttle reasons.
- Lockstep: `LockstepRunner`, what engine/lockstep.run_lockstep_block asks of a runner, for fake workers.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

# Clocks


class FakeClock:
    """Time advances only when the fake workload runs (by a seeded noisy cost) or the clock is read."""

    def __init__(self, call_cost: float, noise: float = 0.0, read_cost: float = 1e-7, seed: int = 0) -> None:
        self.now = 0.0
        self.call_cost = call_cost
        self.noise = noise
        self.read_cost = read_cost
        self.rng = random.Random(seed)
        self.calls = 0

    def __call__(self) -> float:
        self.now += self.read_cost
        return self.now

    def workload(self) -> Callable[[], None]:
        def fn() -> None:
            self.calls += 1
            self.now += self.call_cost * (1.0 + abs(self.rng.gauss(0.0, self.noise)))

        return fn


class DriftingClock:
    """Time advances when a fake kernel runs: its nominal cost times the machine's current slowness, with seeded
    per-call noise; reading the clock costs `read_cost`."""

    def __init__(self, seed: int = 0, noise: float = 0.0, read_cost: float = 1e-7) -> None:
        self.now = 0.0
        self.slowness = 1.0
        self.noise = noise
        self.read_cost = read_cost
        self.rng = random.Random(seed)

    def __call__(self) -> float:
        self.now += self.read_cost
        return self.now

    def kernel(self, cost: float) -> Callable[[], None]:
        def fn() -> None:
            self.now += cost * self.slowness * (1.0 + self.rng.gauss(0.0, self.noise))

        return fn


class RampingClock:
    """A GPU whose SM clock ramps up after idle: a call costs `call_s` x (1 + `ramp` x the share of `ramp_s` still
    to go); the first call pays `wake_s` more (an idle GPU waking up), and the calls numbered in `slow_calls`
    `slow_s` more (one slow block). Time advances only by calls and clock reads."""

    def __init__(
        self,
        call_s: float,
        ramp: float = 0.0,
        ramp_s: float = 0.0,
        wake_s: float = 0.0,
        slow_calls: tuple[int, ...] = (),
        slow_s: float = 0.0,
        read_cost: float = 1e-7,
    ) -> None:
        self.now = 0.0
        self.calls = 0
        self.call_s, self.ramp, self.ramp_s = call_s, ramp, ramp_s
        self.wake_s, self.slow_calls, self.slow_s = wake_s, slow_calls, slow_s
        self.read_cost = read_cost

    def __call__(self) -> float:
        self.now += self.read_cost
        return self.now

    def workload(self) -> Callable[[], None]:
        def fn() -> None:
            left = max(0.0, 1.0 - self.now / self.ramp_s) if self.ramp_s > 0 else 0.0
            cost = self.call_s * (1.0 + self.ramp * left)
            cost += self.wake_s if self.calls == 0 else 0.0
            cost += self.slow_s if self.calls in self.slow_calls else 0.0
            self.calls += 1
            self.now += cost

        return fn


class HeatingGpu:
    """A GPU under sustained load: its SM clock falls from `boost_mhz` towards `sustained_mhz` and its power rises
    towards `cap_w`, both with time constant `tau_s` of busy time; a call's cost scales with 1 / SM clock. Serves as
    the clock (`__call__`), the workload (`kernel`) and, through `nvml()`, a pynvml whose readings follow it."""

    def __init__(
        self,
        call_s: float,
        boost_mhz: float = 1980.0,
        sustained_mhz: float = 1700.0,
        cap_w: float = 700.0,
        idle_w: float = 300.0,
        tau_s: float = 2.0,
    ) -> None:
        self.now = 0.0
        self.call_s, self.boost, self.sustained, self.cap, self.idle, self.tau = (
            call_s,
            boost_mhz,
            sustained_mhz,
            cap_w,
            idle_w,
            tau_s,
        )

    def __call__(self) -> float:
        self.now += 1e-7
        return self.now

    def _heat(self) -> float:
        return 1.0 - math.exp(-self.now / self.tau)

    def sm_mhz(self) -> float:
        return self.boost - (self.boost - self.sustained) * self._heat()

    def power_w(self) -> float:
        return self.idle + (self.cap - self.idle) * self._heat()

    def kernel(self) -> None:
        self.now += self.call_s * self.boost / self.sm_mhz()

    def nvml(self) -> Any:
        gpu = self

        class Nvml(FakeNvml):
            def nvmlDeviceGetClockInfo(self, h: Any, kind: int) -> int:
                return round(gpu.sm_mhz()) if kind == self.NVML_CLOCK_SM else 3201

            def nvmlDeviceGetPowerUsage(self, h: Any) -> int:
                return round(gpu.power_w() * 1000)

        return Nvml([0])


# GPU: a fake `torch` over a fake device


class FakeGpu:
    """A synchronous fake GPU: a kernel advances `now` at once; `log` records every operation in order."""

    def __init__(self, kernel_s: float, cold_penalty_s: float = 0.0, launch_s: float = 0.0) -> None:
        self.now = 0.0
        self.log: list[str] = []
        self.kernel_s = kernel_s
        self.cold_penalty_s = cold_penalty_s
        self.launch_s = launch_s
        self.l2_warm = False
        self.capturing: list[Callable[[], None]] | None = None

    def kernel(self) -> None:
        if self.capturing is not None:
            self.log.append("capture-kernel")
            self.capturing.append(self.kernel)
            return
        self.log.append("kernel")
        self.now += self.kernel_s + self.launch_s + (0.0 if self.l2_warm else self.cold_penalty_s)
        self.l2_warm = True


class FakeEvent:
    def __init__(self, gpu: FakeGpu) -> None:
        self.gpu = gpu
        self.t: float | None = None

    def record(self) -> None:
        self.gpu.log.append("record")
        self.t = self.gpu.now

    def synchronize(self) -> None:
        self.gpu.log.append("sync")

    def query(self) -> bool:
        return False  # the synchronous fake GPU: read as a GPU that is always busy ahead of the host

    def elapsed_time(self, other: FakeEvent) -> float:
        assert self.t is not None and other.t is not None
        return (other.t - self.t) * 1e3  # milliseconds, like torch


class FakeTensor:
    def __init__(self, gpu: FakeGpu, n: int) -> None:
        self.gpu = gpu
        self.n = n

    def fill_(self, value: float) -> None:
        self.gpu.log.append("init")

    def sum(self) -> None:
        self.gpu.log.append(f"flush:{self.n * 4}")
        self.gpu.now += 1e-3  # the flush takes time, which must not be timed
        self.gpu.l2_warm = False


class Capturing:
    """`torch.cuda.graph(g)` of both fake GPUs: while open, the GPU records launches into `into` (g's list)."""

    def __init__(self, gpu: Any, into: list[Any]) -> None:
        self.gpu, self.into = gpu, into

    def __enter__(self) -> None:
        self.gpu.capturing = self.into

    def __exit__(self, *exc: object) -> None:
        self.gpu.capturing = None


def fake_torch(gpu: FakeGpu, l2: int = 50 * 2**20) -> Any:
    class Graph:
        def __init__(self) -> None:
            self.calls: list[Callable[[], None]] = []

        def replay(self) -> None:
            gpu.log.append(f"replay:{len(self.calls)}")
            for _ in self.calls:
                gpu.now += gpu.kernel_s  # no launch overhead in a graph
            gpu.l2_warm = True

    class Null:
        def __enter__(self) -> None: ...
        def __exit__(self, *exc: object) -> None: ...

    class FakeStream:
        def wait_stream(self, other: object) -> None: ...

    class Props:
        L2_cache_size = l2

    class Cuda:
        Event = staticmethod(lambda enable_timing=True: FakeEvent(gpu))
        CUDAGraph = Graph
        Stream = FakeStream

        @staticmethod
        def get_device_properties(i: int) -> Props:
            return Props()

        @staticmethod
        def current_stream() -> FakeStream:
            return FakeStream()

        @staticmethod
        def stream(s: FakeStream) -> Null:
            return Null()

        @staticmethod
        def graph(g: Graph) -> Capturing:
            return Capturing(gpu, g.calls)

        @staticmethod
        def synchronize() -> None:
            gpu.log.append("device-sync")

    class Torch:
        cuda = Cuda
        float32 = "float32"

        @staticmethod
        def empty(n: int, dtype: object, device: str) -> FakeTensor:
            return FakeTensor(gpu, n)

    return Torch


def host_clock(gpu: FakeGpu) -> Callable[[], float]:
    return lambda: gpu.now


class AsyncGpu:
    """A fake GPU that runs a stream asynchronously from the host: each launch costs the host `launch_s` (and a
    call `call_host_s` more), work starts when both the stream and the launch are ready, events are stamped when
    the stream reaches them. This is the model under which a cold sample can time the host's launch latency."""

    def __init__(self, kernel_s: float, cold_penalty_s: float, call_host_s: float, flush_s: float = 10e-6) -> None:
        self.host = 0.0
        self.stream_free = 0.0
        self.kernel_s, self.cold_penalty_s, self.call_host_s, self.flush_s = (
            kernel_s,
            cold_penalty_s,
            call_host_s,
            flush_s,
        )
        self.launch_s = 3e-6
        self.cycles_per_s = 1.98e9
        self.l2_warm = True
        self.log: list[str] = []
        self.capturing: list[float] | None = None  # kernel durations recorded into a graph being captured
        self.replay_host_s = 8e-6

    def _enqueue(self, duration_s: float, host_s: float) -> float:
        self.host += host_s
        begin = max(self.stream_free, self.host)
        self.stream_free = begin + duration_s
        return begin

    def call(self) -> None:
        if self.capturing is not None:
            self.capturing.append(self.kernel_s)
            return
        self.log.append("call")
        self._enqueue(self.kernel_s + (0.0 if self.l2_warm else self.cold_penalty_s), self.call_host_s)
        self.l2_warm = True

    def flush(self) -> None:
        self.log.append("flush")
        self._enqueue(self.flush_s, self.launch_s)
        self.l2_warm = False

    def sleep(self, cycles: int) -> None:
        self.log.append("sleep")
        self._enqueue(cycles / self.cycles_per_s, self.launch_s)


def async_torch(gpu: AsyncGpu, with_sleep: bool = True) -> Any:
    class Event:
        def __init__(self, enable_timing: bool = True) -> None:
            self.t = 0.0

        def record(self) -> None:
            self.t = gpu._enqueue(0.0, 0.5e-6)

        def synchronize(self) -> None:
            gpu.host = max(gpu.host, self.t)

        def query(self) -> bool:
            return self.t <= gpu.host  # the stream has passed the event by the host's time now

        def elapsed_time(self, other: Event) -> float:
            return (other.t - self.t) * 1e3

    class Scratch:
        def fill_(self, value: float) -> None: ...

        def sum(self) -> None:
            gpu.flush()

    class Props:
        L2_cache_size = 50 * 2**20

    class Graph:
        def __init__(self) -> None:
            self.kernels: list[float] = []

        def replay(self) -> None:  # one launch for the whole graph; its kernels run back to back
            gpu.log.append(f"replay:{len(self.kernels)}")
            gpu._enqueue(sum(self.kernels), gpu.replay_host_s)

    class SideStream:
        def wait_stream(self, other: object) -> None: ...

        def __enter__(self) -> None: ...

        def __exit__(self, *exc: object) -> None: ...

    class Cuda:
        CUDAGraph = Graph
        Stream = SideStream
        graph = staticmethod(lambda g: Capturing(gpu, g.kernels))

        @staticmethod
        def current_stream() -> SideStream:
            return SideStream()

        @staticmethod
        def stream(s: SideStream) -> SideStream:
            return s

        @staticmethod
        def synchronize() -> None:
            gpu.host = max(gpu.host, gpu.stream_free)

    Cuda.Event = Event  # type: ignore[attr-defined]
    Cuda.get_device_properties = staticmethod(lambda i: Props())  # type: ignore[attr-defined]
    if with_sleep:
        Cuda._sleep = staticmethod(gpu.sleep)  # type: ignore[attr-defined]

    class Torch:
        cuda = Cuda
        float32 = "float32"

        @staticmethod
        def empty(n: int, dtype: object, device: str) -> Scratch:
            return Scratch()

    return Torch


# NVML


class FakeNvml:
    """pynvml with fixed readings; throttle reasons follow `throttle_masks`, one per read (the last repeats)."""

    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0

    def __init__(self, throttle_masks: list[int]) -> None:
        self.masks = throttle_masks
        self.reads = 0
        self.energy = 1_000_000

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: Any) -> int:
        mask = self.masks[min(self.reads, len(self.masks) - 1)]
        self.reads += 1
        return mask

    def nvmlDeviceGetClockInfo(self, h: Any, kind: int) -> int:
        return 1980 if kind == self.NVML_CLOCK_SM else 3201

    def nvmlDeviceGetPowerUsage(self, h: Any) -> int:
        return 450_000  # mW

    def nvmlDeviceGetTemperature(self, h: Any, sensor: int) -> int:
        return 51

    def nvmlDeviceGetTotalEnergyConsumption(self, h: Any) -> int:
        self.energy += 900  # mJ per read
        return self.energy

    def nvmlDeviceGetMemoryInfo(self, h: Any) -> Any:
        return SimpleNamespace(used=2**30)


class FakeCudaAllocator:
    """torch.cuda's allocator counters, for the device-memory probe (profilers/case_memory.py): `alloc` and
    `free` move `memory_allocated`; the peak follows it until `reset_peak_memory_stats`."""

    def __init__(self, allocated: int = 0) -> None:
        self.allocated = allocated
        self.peak = allocated
        self.syncs = 0

    def alloc(self, n: int) -> None:
        self.allocated += n
        self.peak = max(self.peak, self.allocated)

    def free(self, n: int) -> None:
        self.allocated -= n

    def memory_allocated(self) -> int:
        return self.allocated

    def max_memory_allocated(self) -> int:
        return self.peak

    def reset_peak_memory_stats(self) -> None:
        self.peak = self.allocated

    def synchronize(self) -> None:
        self.syncs += 1


def fake_cuda_torch(allocator: FakeCudaAllocator) -> Any:
    """A `torch` whose only part is `torch.cuda` backed by `allocator`."""

    class Torch:
        cuda = allocator

    return Torch()


# Lockstep


class LockstepRunner:
    """A runner for engine/lockstep.run_lockstep_block driving fake workers: every pair measures `specs`, the
    workers come from `make_worker(case ids, index, tag)`, and `steady` names the cases decided on their device
    clock."""

    def __init__(
        self, specs: list[Any], make_worker: Callable[[list[str], int, str], Any], gpu: bool = False,
        steady: tuple[str, ...] = (),
    ) -> None:  # fmt: skip
        from perfci.engine.runner import RunSettings

        self.settings = RunSettings(peaks_cache=None)
        self.specs, self.make_worker, self.gpu, self.steady = specs, make_worker, gpu, steady

    def lockstep_worker(self, todo: list[Any], index: int, done: list[str], tag: str) -> Any:
        """The fake worker, with the limits a real one is watched under."""
        from perfci.engine.supervisor import Limits

        worker = self.make_worker([s.id for s in todo], index, tag)
        worker.limits = Limits(self.settings.case_timeout_s, 2**30)
        return worker

    def todo(self, index: int, only: list[str] | None) -> list[Any]:
        return self.specs

    def steady_clock(self, case_id: str, lockstep: bool = False) -> str:
        from perfci.profilers.device_time import STEADY_DEVICE

        return STEADY_DEVICE if case_id in self.steady else ""

    def uses_gpu(self) -> bool:
        return self.gpu

    def learn_imports(self, imported: tuple[str, ...]) -> None:
        pass

    def write_partial(self) -> None:
        pass

    def move_off_pair_cpus(self, pid: int) -> None:
        pass


def device_clock(s: Any, samples: tuple[float, ...], telemetry: dict[str, Any]) -> Any:
    """A case session's device clock as its finish takes it: the profiled slice (engine/case_session
    `_device_slice`), then its reading (`_read_device`)."""
    from perfci.engine import case_session

    steps: dict[str, float] = {}
    return case_session._read_device(case_session._device_slice(s, samples, telemetry, steps), telemetry, steps)


# Container runtimes


def runtime_saying(path: Path, stderr: str, code: int) -> Path:
    """An executable stand-in for a container runtime that writes `stderr` and exits with `code`, whatever it is
    asked (a daemon that is down, an image that is missing, a runtime's own configuration error)."""
    quoted = stderr.replace("'", "'\\''")
    path.write_text(f"#!/bin/sh\necho '{quoted}' >&2\nexit {code}\n")
    path.chmod(0o755)
    return path
