"""Calibration robust to a slow block, with injected fake clocks and no sleeps: a GPU whose SM clock
ramps up over the first blocks, an idle GPU that wakes up slowly, one slow block at a random place. Every round of
a case must get an iteration count within 2x of the case's other rounds."""

from __future__ import annotations

import random
import statistics

import pytest

from perfci.engine.lockstep import agreed_iterations
from perfci.engine.protocol import Prepared
from perfci.profilers.timing import TimingSettings, _grow, calibrate, clock_block_timer, warm_up
from tests.fakes import RampingClock

CALL_S = 186e-6  # a 4096^3 bf16 GEMM on an H200
SETTINGS = TimingSettings()


def _round_clocks(rounds: int, seed: int) -> list[RampingClock]:
    """One fresh fake GPU per round: some wake up slowly, all ramp their clock, each has one slow block."""
    rng = random.Random(seed)
    return [
        RampingClock(
            CALL_S,
            ramp=rng.uniform(0.2, 0.7),  # 1,545-1,620 MHz against 1,980 MHz at the start
            ramp_s=rng.uniform(0.005, 0.08),
            wake_s=rng.choice([0.0, 3e-3]),
            slow_calls=(rng.randrange(3, 400),),
            slow_s=rng.uniform(1e-3, 5e-3),
        )
        for _ in range(rounds)
    ]


def _within_2x(counts: list[int]) -> bool:
    mid = statistics.median(counts)
    return all(mid / 2 <= c <= 2 * mid for c in counts)


def _round_count(clock: RampingClock) -> int:
    fn = clock.workload()
    settings = TimingSettings(warmup_s=0.0, min_warmup_calls=1)  # a short warm-up: the ramp reaches calibration
    warm_up(fn, clock, settings)
    return calibrate(fn, clock_block_timer(clock), 1e-7, settings)


@pytest.mark.parametrize("seed", range(5))
def test_every_rounds_count_is_within_2x_of_its_cases_other_rounds(seed: int) -> None:
    counts = [_round_count(c) for c in _round_clocks(10, seed)]
    assert _within_2x(counts), counts
    # and the count is the steady state's: 2 ms / 186 us -> 11 calls
    assert statistics.median(counts) == pytest.approx(SETTINGS.min_sample_s / CALL_S, rel=0.1)


def test_the_fake_reproduces_the_failure_of_a_single_block_calibration() -> None:
    """The count taken from the first block that reaches the target (the earlier calibration) falls to 1
    in the rounds that start with a slow block: the test above would catch it."""
    counts = []
    for clock in _round_clocks(10, 0):
        fn = clock.workload()
        counts.append(_grow(fn, clock_block_timer(clock), SETTINGS.min_sample_s, SETTINGS))
    assert not _within_2x(counts), counts


def test_calibration_waits_for_the_clock_ramp_to_end() -> None:
    """A ramp of 60% over 50 ms: the count is the one of the top clock, not of the ramp's first blocks."""
    clock = RampingClock(CALL_S, ramp=0.6, ramp_s=0.05)
    n = calibrate(clock.workload(), clock_block_timer(clock), 1e-7, SETTINGS)
    assert n == pytest.approx(SETTINGS.min_sample_s / CALL_S, rel=0.1)


def test_a_slow_call_still_gets_one_iteration_in_bounded_time() -> None:
    clock = RampingClock(0.05)  # 50 ms a call: far above the 2 ms target
    n = calibrate(clock.workload(), clock_block_timer(clock), 1e-7, SETTINGS)
    assert n == 1
    assert clock.now < 2 * SETTINGS.steady_max_s + 0.2  # the steady-state and median phases are capped


def test_both_sides_of_a_pair_use_the_larger_calibrated_count() -> None:
    a = Prepared(("x", "y", "only_a"), {"x": 11, "y": 400, "only_a": 3})
    b = Prepared(("x", "y"), {"x": 12, "y": 380})
    assert agreed_iterations(a, b) == {"x": 12, "y": 400}
