"""CPU twin of the GPU timing paths: a fake `torch.cuda` records the order of operations and advances a fake
GPU clock, so hot/cold/graph logic is checked without a GPU (the real run is benchmarks/gpu_check.sh)."""

from __future__ import annotations

import pytest

from perfci.profilers.cuda_timing import cuda_timer
from perfci.profilers.timing import TimingSettings, measure
from tests.fakes import AsyncGpu, FakeGpu, async_torch, fake_torch, host_clock

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


def test_sustained_cold_flushes_before_every_call_times_only_the_calls_and_keeps_the_gpu_busy() -> None:
    gpu = FakeGpu(kernel_s=1e-5, cold_penalty_s=5e-6)
    setup = cuda_timer(fake_torch(gpu, l2=50 * 2**20), "sustained-cold")
    assert setup.fixed_iterations is None and setup.flush_bytes == 100 * 2**20  # calibrated, unlike cold mode
    gpu.log.clear()
    elapsed = setup.timer(gpu.kernel, 4)
    flush = f"flush:{100 * 2**20}"
    # 4 timed (flush, call) pairs, then 3 untimed pairs queued before the host waits
    assert gpu.log == [*[flush, "record", "kernel", "record"] * 4, *[flush, "kernel"] * 3, "sync"]
    assert elapsed == pytest.approx(4 * 1.5e-5)  # every call cold; the 1 ms flushes are not timed
    assert setup.timer.host_bound_blocks == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize(("call_host_s", "host_bound"), [(1e-6, 0), (150e-6, 1)])
def test_sustained_cold_counts_blocks_where_the_gpu_waited_for_the_host(call_host_s: float, host_bound: int) -> None:
    """50 us calls after 10 us flushes: a host that launches a call in 1 us stays ahead and every timed call is
    the GPU's 52 us; one that needs 150 us falls behind, the GPU waits inside timed calls, and the block counts."""
    gpu = AsyncGpu(kernel_s=50e-6, cold_penalty_s=2e-6, call_host_s=call_host_s)
    setup = cuda_timer(async_torch(gpu), "sustained-cold", clock=lambda: gpu.host)
    elapsed = setup.timer(gpu.call, 8)
    assert setup.timer.host_bound_blocks == host_bound  # type: ignore[attr-defined]
    if host_bound:
        assert elapsed > 8 * 52e-6 * 1.5
    else:
        assert elapsed == pytest.approx(8 * 52e-6)
