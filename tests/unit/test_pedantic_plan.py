"""`benchmark.pedantic`'s explicit request measured in-process (pytest_plugin/measure.py), with a fake clock:
what the test fixes is honoured exactly, what it leaves open is perfci's."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from perfci.pytest_plugin.measure import FixedPlan, InProcessSettings, measure_fixed, pinned_threads, split_samples


class Ticks:
    """A clock that moves 1 ms per target call (the target advances it) and not otherwise."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def call(self, x: int) -> int:
        self.now += 1e-3
        return x * 2


@pytest.mark.parametrize(("total", "rounds", "want"), [(7, 5, [2, 2, 1, 1, 1]), (3, 5, [1, 1, 1]), (10, 2, [5, 5])])
def test_split_samples(total: int, rounds: int, want: list[int]) -> None:
    assert split_samples(total, rounds) == want


def test_fixed_rounds_iterations_and_setup_are_honoured() -> None:
    clock, setups, teardowns = Ticks(), [], []

    def prepare() -> tuple[tuple[Any, ...], dict[str, Any]]:
        setups.append(1)
        clock.now += 5.0  # the setup's time is not the target's
        return (21,), {}

    plan = FixedPlan(rounds=7, iterations=None, warmup_rounds=2, setup=True)
    rounds, result = measure_fixed(
        clock.call, prepare, lambda *a: teardowns.append(a), plan, InProcessSettings(rounds=3, budget_s=0.1), clock
    )
    assert result == 42
    assert [len(r.samples) for r in rounds] == [3, 2, 2]
    assert {r.iterations for r in rounds} == {1}
    assert all(s == pytest.approx(1e-3) for r in rounds for s in r.samples)  # setup and teardown untimed
    assert len(setups) == len(teardowns) == 9  # two warm-up calls, seven timed
    assert {r.stop_reason for r in rounds} == {"fixed"}


def test_fixed_iterations_are_used_as_given() -> None:
    clock = Ticks()
    plan = FixedPlan(rounds=4, iterations=25, warmup_rounds=0, setup=False)
    rounds, _ = measure_fixed(clock.call, lambda: ((1,), {}), None, plan, InProcessSettings(rounds=2), clock)
    assert [r.iterations for r in rounds] == [25, 25]
    assert [s for r in rounds for s in r.samples] == pytest.approx([25e-3] * 4)


def test_open_rounds_sample_until_the_budget() -> None:
    clock = Ticks()
    plan = FixedPlan(rounds=None, iterations=3, warmup_rounds=0, setup=False)
    settings = InProcessSettings(rounds=2, budget_s=0.03)
    rounds, _ = measure_fixed(clock.call, lambda: ((1,), {}), None, plan, settings, clock)
    assert len(rounds) == 2
    assert all(len(r.samples) == 10 for r in rounds)  # 3 ms a sample, 30 ms of budget
    assert {r.stop_reason for r in rounds} == {"budget"}


def test_torch_threads_pinned_while_measuring_and_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    state = {"n": 8}
    fake = types.SimpleNamespace(get_num_threads=lambda: state["n"], set_num_threads=lambda n: state.update(n=n))
    monkeypatch.setitem(sys.modules, "torch", fake)
    with pinned_threads(1) as threads:
        assert threads == 1 and state["n"] == 1
    assert state["n"] == 8
    with pinned_threads(0) as threads:  # 0: torch's own count
        assert threads == 8
