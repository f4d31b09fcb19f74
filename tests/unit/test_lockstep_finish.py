"""How the two workers of a lockstep pair finish (engine/lockstep.finish_pair): side by side for CPU cases, one
after the other for CUDA cases, so that neither side's profiled calls share the GPU with the other's finish."""

from __future__ import annotations

import random

import pytest

from perfci.engine.lockstep import collect, finish_pair
from perfci.engine.protocol import Done, Finish, Released


class FakeWorker:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def send(self, message: object) -> None:
        assert isinstance(message, Finish)
        self.log.append(f"finish {self.name}")

    def wait_for(self, kind: type, timeout_s: float) -> None:
        assert kind in (Done, Released) and timeout_s == 30.0
        self.log.append(f"{'done' if kind is Done else 'released'} {self.name}")


def _run(one_at_a_time: bool, seed: int) -> list[str]:
    log: list[str] = []
    workers = [FakeWorker("A", log), FakeWorker("B", log)]
    finish_pair(workers, one_at_a_time, random.Random(seed), 30.0, lambda w: log.append(f"moved {w.name}"))  # type: ignore[arg-type, attr-defined]
    return log


def test_cpu_pairs_finish_side_by_side() -> None:
    assert _run(False, 0) == ["finish A", "finish B", "done A", "done B"]


@pytest.mark.parametrize("seed", range(8))
def test_gpu_pairs_take_the_gpu_one_side_at_a_time_and_leave_their_results_for_later(seed: int) -> None:
    """The second side starts its GPU work once the first has released the GPU; the results (`Done`) are not
    waited for here (`collect`, after the next pair's GPU work), and each released worker is moved off the
    pairs' CPUs."""
    log = _run(True, seed)
    first, second = log[0].split()[1], log[3].split()[1]
    assert log == [
        f"finish {first}",
        f"released {first}",
        f"moved {first}",
        f"finish {second}",
        f"released {second}",
        f"moved {second}",
    ]
    assert {first, second} == {"A", "B"}
    later: list[str] = []
    collect([FakeWorker("A", later), FakeWorker("B", later)], 30.0)  # type: ignore[list-item]
    assert later == ["done A", "done B"]


def test_the_side_that_finishes_first_is_drawn_per_pair() -> None:
    firsts = [_run(True, seed)[0] for seed in range(40)]
    assert 10 <= firsts.count("finish A") <= 30  # both orders occur: a hot GPU after one side is no bias


def test_only_the_first_lockstep_pair_takes_the_energy_block() -> None:
    """An A/B compares no energy row: a CUDA case takes its 0.5 s energy block in the first pair only
    (engine/case_session.pair_settings); ordinary rounds keep it."""
    from perfci.engine.case_session import pair_settings
    from perfci.engine.protocol import Job
    from perfci.profilers.timing import TimingSettings

    settings = TimingSettings()
    assert settings.energy_window_s > 0
    assert (
        pair_settings(settings, Job(cases=(), round_index=0, lockstep=True)).energy_window_s == settings.energy_window_s
    )
    assert pair_settings(settings, Job(cases=(), round_index=3, lockstep=True)).energy_window_s == 0.0
    assert pair_settings(settings, Job(cases=(), round_index=3)).energy_window_s == settings.energy_window_s
