"""The clock a GPU holds under sustained load (profilers/peaks.py, with a fake GPU and clock) and the reports'
note on cases sampled above it (reports/gpu_modes.py)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

from perfci.format.model import CaseResult, CaseSpec, CaseStatus, Round
from perfci.profilers.peaks import sustained_clock
from perfci.reports.gpu_modes import boost_notes, sampled_clock
from tests.conftest import make_run


class FakeGpu:
    """Boosts at 1980 MHz for its first 2 s under load, then holds 1755 MHz at 700 W; a call takes 0.1 s."""

    def __init__(self) -> None:
        self.now = 0.0
        self.cuda = SimpleNamespace(synchronize=lambda: None)

    def call(self) -> None:
        self.now += 0.1 / 8

    def snapshot(self) -> dict[str, Any]:
        return {"sm_clock_mhz": 1980 if self.now < 2.0 else 1755, "power_w": 520 if self.now < 2.0 else 700}


def test_the_sustained_clock_is_the_one_held_at_the_end_of_the_soak() -> None:
    gpu = FakeGpu()
    held = sustained_clock(gpu, gpu.call, "cuda:0", soak_s=8.0, probe=gpu, clock=lambda: gpu.now)
    assert held == {"sustained_sm_clock_mhz": 1755.0, "sustained_power_w": 700.0}


def _cuda_case(clock: float) -> CaseResult:
    r = Round(0, 1, 10, (1e-3,), 0.0, "budget", 1, telemetry={"gpu": {"sm_clock_mhz": [clock, clock, None]}})
    return CaseResult.of(CaseSpec("gemm", {}, "cuda:0"), CaseStatus.OK, (r, replace(r, index=1)))


def test_a_case_sampled_at_boost_clock_is_named() -> None:
    run = make_run([_cuda_case(1980.0), replace(_cuda_case(1760.0), id="steady@cuda:0")])
    assert sampled_clock(run.cases[0]) == 1980.0
    assert boost_notes(run) == []  # no sustained clock measured for this runner: nothing to say
    run = replace(run, fingerprint={**run.fingerprint, "peaks": {"cuda": {"sustained_sm_clock_mhz": 1755.0}}})
    (note,) = boost_notes(run)
    assert note.startswith("gemm@cuda:0: sampled at 1980 MHz, above the 1755 MHz this GPU holds")
