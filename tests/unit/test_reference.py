"""Speed reference (profilers/reference.py): a fake clock whose machine speed drifts between rounds, no sleeps."""

from __future__ import annotations

import pytest

from perfci.format.model import Round
from perfci.metrics import case_metrics, reference_ratio
from perfci.profilers.reference import REFERENCE_SAMPLE_S, open_reference
from perfci.profilers.timing import Sampler, TimingSettings, clock_block_timer
from tests.fakes import DriftingClock


def _round(index: int, clock: DriftingClock, slowness: float, settings: TimingSettings) -> Round:
    clock.slowness = slowness
    timer = clock_block_timer(clock)
    ref = open_reference(clock.kernel(50e-6), timer, 1e-7, settings)
    sampler = Sampler(clock.kernel(1e-3), timer, clock, 2, settings, before_sample=ref.sample)
    sampler.run_slice(settings.budget_s)
    return Round(
        index=index,
        pid=1,
        iterations=2,
        samples=tuple(sampler.samples),
        warmup_s=0.0,
        stop_reason=sampler.stop_reason or "budget",
        threads=1,
        telemetry={"reference_per_call_s": ref.per_call},
    )


def test_reference_calibrates_its_block_and_is_timed_before_every_sample() -> None:
    clock = DriftingClock()
    settings = TimingSettings(min_samples=40, max_samples=40, noise_target=0.0, budget_s=1.0)
    timer = clock_block_timer(clock)
    ref = open_reference(clock.kernel(40e-6), timer, 1e-7, settings)
    assert ref.iterations == 8  # 40 us x 8 = 320 us: the first power of two reaching REFERENCE_SAMPLE_S
    assert 40e-6 * ref.iterations >= REFERENCE_SAMPLE_S > 40e-6 * ref.iterations / 2
    sampler = Sampler(clock.kernel(1e-3), timer, clock, 2, settings, before_sample=ref.sample)
    sampler.run_slice(settings.budget_s)
    assert len(ref.per_call) == len(sampler.samples) == 40
    assert ref.per_call[0] == pytest.approx(40e-6, rel=1e-3)  # per call, clock reads included


def test_ratio_cancels_the_machine_speed_that_moves_the_latency() -> None:
    """Five rounds at slowness 1.0-1.4 (the CI VM's range): the latency moves 40%, the ratio to the reference
    stays at the kernels' true ratio (1 ms / 50 us = 20) within the seeded 2% per-call noise."""
    clock = DriftingClock(seed=3, noise=0.02)
    settings = TimingSettings(min_samples=10, max_samples=30, noise_target=0.0, budget_s=1.0)
    rounds = tuple(_round(i, clock, s, settings) for i, s in enumerate((1.0, 1.4, 1.1, 1.3, 1.2)))
    metrics = {m.name: m for m in case_metrics(rounds, None, None)}
    lat, ratio = metrics["latency.median"], metrics["latency.vs_reference"]
    assert lat.high / lat.low > 1.15  # the raw interval spans the drift
    assert ratio.value == pytest.approx(20.0, rel=0.01)
    assert ratio.high / ratio.low < 1.02
    assert ratio.unit == "x ref" and ratio.direction.value == "lower"
    assert all(reference_ratio(r) == pytest.approx(20.0, rel=0.02) for r in rounds)


def test_no_reference_no_metric() -> None:
    r = Round(index=0, pid=1, iterations=1, samples=(1e-3, 1e-3), warmup_s=0.0, stop_reason="budget", threads=1)
    assert reference_ratio(r) is None
    assert "latency.vs_reference" not in {m.name for m in case_metrics((r,), None, None)}
