"""CPU timing with an injected fake clock: calibration and the stopping rule, no sleeps."""

from __future__ import annotations

from collections.abc import Callable

from perfci.profilers.timing import TimingSettings, calibrate, clock_block_timer, measure, sample, timer_overhead
from tests.fakes import FakeClock


def test_overhead_is_the_read_cost() -> None:
    clock = FakeClock(call_cost=1e-6, read_cost=2e-7)
    assert abs(timer_overhead(clock) - 2e-7) < 1e-12


def test_calibration_makes_overhead_below_one_percent() -> None:
    clock = FakeClock(call_cost=1e-6, read_cost=5e-7)
    settings = TimingSettings(min_sample_s=0.0, max_overhead=0.01)
    iterations = calibrate(clock.workload(), clock_block_timer(clock), 5e-7, settings)
    # a block of `iterations` calls must last >= 100x the overhead: 1e-6 * n >= 5e-5 -> n >= 50
    assert iterations * 1e-6 >= 5e-7 / 0.01
    # and calibration does not overshoot by more than the x16 step allows
    assert iterations * 1e-6 < 16 * 5e-5


def test_calibration_respects_min_sample_time() -> None:
    clock = FakeClock(call_cost=1e-4)
    iterations = calibrate(clock.workload(), clock_block_timer(clock), 1e-7, TimingSettings(min_sample_s=0.002))
    assert iterations * 1e-4 >= 0.002
    assert iterations < 2 * 16 * 20


def test_slow_call_needs_one_iteration() -> None:
    clock = FakeClock(call_cost=0.01)
    assert calibrate(clock.workload(), clock_block_timer(clock), 1e-7, TimingSettings()) == 1


def test_quiet_workload_stops_on_noise_target_after_min_samples() -> None:
    clock = FakeClock(call_cost=1e-3, noise=0.001, seed=1)
    settings = TimingSettings(min_samples=10, noise_target=0.01, budget_s=10.0)
    samples, reason = sample(clock.workload(), clock_block_timer(clock), clock, 2, settings)
    assert reason == "noise_target"
    assert len(samples) == 10


def test_noisy_workload_runs_until_budget() -> None:
    clock = FakeClock(call_cost=1e-3, noise=0.5, seed=2)
    settings = TimingSettings(min_samples=10, noise_target=0.001, budget_s=0.1, max_samples=10_000)
    samples, reason = sample(clock.workload(), clock_block_timer(clock), clock, 1, settings)
    assert reason == "budget"
    # the budget is checked after each sample: it overruns by at most one sample
    total = sum(samples)
    assert total + 1e-3 >= 0.1 and total < 0.1 + 0.01


def test_max_samples_caps_sampling() -> None:
    clock = FakeClock(call_cost=1e-3, noise=0.5, seed=3)
    settings = TimingSettings(min_samples=5, max_samples=25, noise_target=0.0001, budget_s=100.0)
    samples, reason = sample(clock.workload(), clock_block_timer(clock), clock, 1, settings)
    assert (reason, len(samples)) == ("max_samples", 25)


def test_measure_warms_up_then_samples() -> None:
    clock = FakeClock(call_cost=1e-4, noise=0.001, seed=4)
    fn = clock.workload()
    settings = TimingSettings(warmup_s=0.01, min_warmup_calls=3, min_sample_s=0.001, budget_s=1.0)
    outcome = measure(fn, clock, settings)
    assert outcome.warmup_s >= 0.01
    assert outcome.iterations * 1e-4 >= 0.001
    assert outcome.stop_reason == "noise_target"
    # each sample is iterations x call cost, within the injected noise
    for s in outcome.samples:
        assert abs(s / outcome.iterations - 1e-4) / 1e-4 < 0.01


def test_sampler_slices_spread_samples_and_final_slice_sets_the_reason() -> None:
    from perfci.profilers.timing import Sampler

    clock = FakeClock(call_cost=1e-3, noise=0.5, seed=5)
    settings = TimingSettings(min_samples=10, noise_target=0.0001, budget_s=0.03, max_samples=10_000)
    sampler = Sampler(clock.workload(), clock_block_timer(clock), clock, 1, settings)
    sampler.run_slice(0.01, final=False)
    first = len(sampler.samples)
    # a non-final slice ends at the first sample that reaches its budget, even below min_samples
    assert sampler.stop_reason is None and first < settings.min_samples
    assert sum(sampler.samples[: first - 1]) < 0.01 <= sum(sampler.samples) + 1e-6
    sampler.run_slice(0.01, final=False)
    assert sampler.stop_reason is None
    sampler.run_slice(0.01, final=True)
    assert sampler.stop_reason == "budget"
    assert len(sampler.samples) >= settings.min_samples
    assert 0.03 <= sum(sampler.samples) + 1e-5 < 0.03 + 3 * 0.01


def test_final_slice_keeps_sampling_until_min_samples() -> None:
    from perfci.profilers.timing import Sampler

    clock = FakeClock(call_cost=1e-2, noise=0.5, seed=6)
    settings = TimingSettings(min_samples=10, noise_target=0.0001, budget_s=0.01)
    sampler = Sampler(clock.workload(), clock_block_timer(clock), clock, 1, settings)
    sampler.run_slice(0.001, final=True)
    assert len(sampler.samples) == 10 and sampler.stop_reason == "budget"


def test_take_rewarm_keeps_a_cold_first_call_out_of_the_sample() -> None:
    """Lockstep hands the CPU to the partner between samples; the next call pays a cache refill. Model it as a
    fixed extra cost on the first call after a switch: without rewarm it lands in the sample, with it it does
    not, and the elapsed time reported to the driver still counts the untimed call."""
    from perfci.profilers.timing import Sampler

    clock = FakeClock(call_cost=1e-3, read_cost=0.0)
    cold = {"pending": True}

    def fn() -> None:
        clock.now += 1e-3 + (3e-4 if cold["pending"] else 0.0)
        cold["pending"] = False

    sampler = Sampler(fn, clock_block_timer(clock), clock, 2, TimingSettings())
    sampler.take(1)
    assert abs(sampler.samples[-1] - (2e-3 + 3e-4)) < 1e-12  # the sample (2 calls) carries the refill
    cold["pending"] = True
    elapsed = sampler.take(1, rewarm=1)
    assert abs(sampler.samples[-1] - 2e-3) < 1e-12  # the refill was paid by the untimed call
    assert abs(elapsed - (1.3e-3 + 2e-3)) < 1e-12
    assert len(sampler.samples) == 2


def test_fault_count_counts_only_inside_timed_blocks_and_per_call() -> None:
    """FaultCount wraps a block timer: faults taken between blocks (set-up, telemetry) are not counted."""
    from perfci.profilers.memory import FaultCount

    counter = {"faults": 100}

    def fn() -> None:
        counter["faults"] += 3  # every call faults 3 times

    def timer(f: Callable[[], object], n: int) -> float:
        for _ in range(n):
            f()
        return 1e-3 * n

    fc = FaultCount(read=lambda: counter["faults"])
    assert fc.per_call() is None
    timed = fc.wrap(timer)
    assert timed(fn, 4) == 4e-3
    counter["faults"] += 50  # outside any block: not counted
    timed(fn, 6)
    assert (fc.faults, fc.calls) == (30, 10)
    assert fc.per_call() == 3.0
