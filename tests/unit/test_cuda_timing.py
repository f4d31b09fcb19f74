"""CPU twin of the GPU timing paths: a fake `torch.cuda` records the order of operations and advances a fake
GPU clock, so hot/cold/graph logic is checked without a GPU (the real run is benchmarks/gpu_check.sh)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from perfci.profilers.cuda_timing import cuda_timer
from perfci.profilers.timing import TimingSettings, measure


class FakeGpu:
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


SETTINGS = TimingSettings(warmup_s=0.0, min_warmup_calls=2, min_samples=10, budget_s=0.05, noise_target=0.01)


def test_hot_mode_times_back_to_back_calls_between_synchronised_events() -> None:
    gpu = FakeGpu(kernel_s=1e-5)
    setup = cuda_timer(fake_torch(gpu), "hot")
    gpu.log.clear()
    elapsed = setup.timer(gpu.kernel, 4)
    assert gpu.log == ["record", "kernel", "kernel", "kernel", "kernel", "record", "sync"]
    assert elapsed == pytest.approx(4e-5)


def test_cold_mode_flushes_l2_outside_the_timed_region_before_every_call() -> None:
    gpu = FakeGpu(kernel_s=1e-5, cold_penalty_s=5e-6)
    setup = cuda_timer(fake_torch(gpu, l2=50 * 2**20), "cold")
    assert setup.fixed_iterations == 1
    assert setup.flush_bytes == 100 * 2**20  # twice the L2
    gpu.log.clear()
    elapsed = setup.timer(gpu.kernel, 2)
    assert gpu.log == [f"flush:{100 * 2**20}", "record", "kernel", "record", "sync"] * 2
    # each call paid the cold penalty; the 1 ms flushes were not timed
    assert elapsed == pytest.approx(2 * 1.5e-5)


def test_cold_and_hot_differ_by_the_cold_penalty_through_measure() -> None:
    hot_gpu, cold_gpu = FakeGpu(1e-5, cold_penalty_s=5e-6), FakeGpu(1e-5, cold_penalty_s=5e-6)
    hot = cuda_timer(fake_torch(hot_gpu), "hot")
    cold = cuda_timer(fake_torch(cold_gpu), "cold")
    h = measure(hot_gpu.kernel, host_clock(hot_gpu), SETTINGS, hot.timer, hot.fixed_iterations)
    c = measure(cold_gpu.kernel, host_clock(cold_gpu), SETTINGS, cold.timer, cold.fixed_iterations)
    assert c.iterations == 1
    assert h.samples[-1] / h.iterations == pytest.approx(1e-5)
    assert c.samples[-1] == pytest.approx(1.5e-5)


def test_graph_mode_captures_once_per_iteration_count_and_removes_launch_overhead() -> None:
    gpu = FakeGpu(kernel_s=1e-6, launch_s=4e-6)
    setup = cuda_timer(fake_torch(gpu), "graph")
    gpu.log.clear()
    first = setup.timer(gpu.kernel, 8)
    captures = gpu.log.count("capture-kernel")
    second = setup.timer(gpu.kernel, 8)
    assert captures == 8 and gpu.log.count("capture-kernel") == 8  # replayed, not captured again
    assert first == pytest.approx(8e-6) and second == pytest.approx(8e-6)
    assert "replay:8" in gpu.log


def test_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown GPU timing mode"):
        cuda_timer(fake_torch(FakeGpu(1e-6)), "lukewarm")


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


@pytest.mark.parametrize("call_host_s", [0.0, 30e-6, 150e-6])
def test_cold_mode_times_only_the_gpu_work_however_slow_the_host_launch(call_host_s: float) -> None:
    gpu = AsyncGpu(kernel_s=5e-6, cold_penalty_s=2e-6, call_host_s=call_host_s)
    setup = cuda_timer(async_torch(gpu), "cold", clock=lambda: gpu.host)
    assert gpu.log == ["sleep"]  # the guard's spin rate is calibrated once, at set-up
    gpu.log.clear()
    assert setup.timer(gpu.call, 3) == pytest.approx(3 * 7e-6)
    assert gpu.log == ["sleep", "flush", "call"] * 3  # the guard first, then flush, then the timed call


def test_without_a_guard_the_host_launch_gap_would_be_timed() -> None:
    """The flaw the guard removes, shown on the same model: a 30 µs host launch after a 10 µs flush adds ~20 µs."""
    gpu = AsyncGpu(kernel_s=5e-6, cold_penalty_s=2e-6, call_host_s=30e-6)
    setup = cuda_timer(async_torch(gpu, with_sleep=False), "cold", clock=lambda: gpu.host)
    gpu.log.clear()
    assert setup.timer(gpu.call, 1) > 20e-6
    assert gpu.log == ["flush", "call"]


def test_a_launch_longer_than_the_guard_grows_it_and_retakes_the_sample() -> None:
    gpu = AsyncGpu(kernel_s=5e-6, cold_penalty_s=2e-6, call_host_s=1e-3)  # 1 ms host launch > 200 µs guard
    setup = cuda_timer(async_torch(gpu), "cold", clock=lambda: gpu.host)
    gpu.log.clear()
    assert setup.timer(gpu.call, 2) == pytest.approx(2 * 7e-6)
    assert gpu.log.count("call") == 3  # the first sample was taken again with a 4 ms guard, the second fit


@pytest.mark.parametrize("with_sleep", [True, False])
def test_graph_mode_keeps_the_replay_launch_out_of_the_timed_region_behind_the_guard(with_sleep: bool) -> None:
    """A replay costs the host 8 µs to launch; 16 captured 1 µs kernels take 16 µs on the GPU. With the guard the
    sample is the GPU work alone; without it (no `_sleep`) the launch gap after the start event is timed too."""
    gpu = AsyncGpu(kernel_s=1e-6, cold_penalty_s=0.0, call_host_s=3e-6)
    setup = cuda_timer(async_torch(gpu, with_sleep=with_sleep), "graph", clock=lambda: gpu.host)
    gpu.log.clear()
    samples = [setup.timer(gpu.call, 16) for _ in range(3)]
    assert gpu.log.count("replay:16") == 3 and "call" in gpu.log  # warm-up calls run, then one capture
    expected = 16e-6 if with_sleep else 16e-6 + gpu.replay_host_s
    assert samples == pytest.approx([expected] * 3)
