"""The `perf` fixture's in-process measurement (perfci/pytest_plugin/measure.py), on a fake clock."""

from __future__ import annotations

import pytest

from perfci.format.model import CaseSpec, CaseStatus
from perfci.metrics.registry import LATENCY
from perfci.pytest_plugin.measure import MIN_ROUNDS, InProcessSettings, measure_rounds, measured_case
from tests.fakes import FakeClock


def test_rounds_are_warmed_calibrated_and_sampled() -> None:
    clock = FakeClock(call_cost=1e-5)
    rounds = measure_rounds(clock.workload(), InProcessSettings(rounds=3, budget_s=0.02), clock)
    assert [r.index for r in rounds] == [0, 1, 2]
    for r in rounds:
        assert r.iterations > 1 and len(r.samples) >= 10 and r.warmup_s > 0
        assert r.telemetry["in_process"] is True
        assert all(x / r.iterations == pytest.approx(1e-5, rel=0.05) for x in r.samples)


def test_at_least_two_rounds_and_metrics_as_for_a_run() -> None:
    clock = FakeClock(call_cost=2e-4)
    spec = CaseSpec(workload="tests/t.py::test_x", params={}, device="cpu")
    case = measured_case(spec, clock.workload(), InProcessSettings(rounds=1, budget_s=0.01), flops=10.0, clock=clock)
    assert len(case.rounds) == MIN_ROUNDS and case.status is CaseStatus.OK
    assert case.id == "tests/t.py::test_x@cpu"
    m = case.metric(LATENCY)
    assert m is not None and m.value == pytest.approx(2e-4, rel=0.05)
    assert case.flops == 10.0
