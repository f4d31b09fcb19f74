"""`timed_round_values` (every timed metric's per-round values of a case at once, for the history store) gives
the very floats each metric's own `round_value` gives, and `prepare_run` writes round statistics of those."""

from __future__ import annotations

import random
from dataclasses import replace

from perfci.format.model import CaseResult, DeviceTime, Round
from perfci.metrics.registry import COMPARABLE, timed_round_values
from perfci.store.rows import _round_stats, prepare_run
from tests.conftest import make_case, make_run

TIMED = {name: d for name, d in COMPARABLE.items() if d.timed}


def _samples(rng: random.Random) -> tuple[float, ...]:
    """Sample times of several shapes: many or few, ties, zeros, wide ranges."""
    n = rng.choice((1, 2, 3, 4, 5, 10, 11, 17, 20, 100))
    kind = rng.random()
    if kind < 0.1:
        return (0.0,) * n  # zero work time: no rates
    if kind < 0.3:
        return tuple(rng.choice((1e-3, 2e-3, 2e-3, 0.0)) for _ in range(n))  # ties
    return tuple(rng.lognormvariate(-7, 3) for _ in range(n))


def _round(base: Round, rng: random.Random, index: int) -> Round:
    """A round with or without a device clock (busy near the latency or well under it), a speed reference (its
    median zero at times) and energy telemetry (zero at times)."""
    samples = _samples(rng)
    iterations = rng.choice((1, 3, 10, 997, 10**6))
    telemetry: dict[str, object] = {}
    if rng.random() < 0.4:
        telemetry["reference_per_call_s"] = rng.choice(
            ([], [0.0, 0.0, 1e-3], [rng.uniform(1e-6, 1e-2) for _ in range(5)])
        )
    if rng.random() < 0.4:
        telemetry["energy_per_call_j"] = rng.choice((0, 0.0, 2, rng.uniform(0, 5)))
    device = None
    if rng.random() < 0.4:
        per_call = max(samples) / iterations
        busy = [per_call * rng.choice((0.2, 0.99, 1.0, 1.5)) for _ in range(rng.randint(1, 6))]
        device = DeviceTime("cupti", tuple(busy), kernels=3)
    return replace(base, index=index, samples=samples, iterations=iterations, telemetry=telemetry, device=device)


def _varied_cases(count: int) -> list[CaseResult]:
    rng = random.Random(11)
    base = make_case("v", 1e-3)
    cases = []
    for i in range(count):
        rounds = tuple(_round(base.rounds[0], rng, j) for j in range(rng.choice((0, 1, 2, 5, 7))))
        if rounds and rng.random() < 0.2:  # a round without samples (the schema refuses one; the model does not)
            rounds = (replace(rounds[0], samples=()), *rounds[1:])
        flops, nbytes = rng.choice((None, 0.0, 1e6, 3.3e9)), rng.choice((None, 0.0, 1e5, 7.7e8))
        cases.append(replace(base, id=f"t.v{i}@cpu", rounds=rounds, flops=flops, bytes=nbytes))
    return cases


def _fresh(case: CaseResult) -> CaseResult:
    """The case with new rounds: no per-call tuples cached on them yet."""
    return replace(case, rounds=tuple(replace(r) for r in case.rounds))


def _one_by_one(case: CaseResult, name: str) -> list[float | None]:
    return [TIMED[name].values(r, case) for r in case.rounds]


def test_every_timed_metric_and_only_those() -> None:
    case = make_case("a", 1e-3)
    assert set(timed_round_values(case)) == set(TIMED)
    assert timed_round_values(replace(case, rounds=())) == {name: [] for name in TIMED}


def test_the_same_floats_as_each_metric_one_by_one() -> None:
    for case in _varied_cases(600):
        expected = {name: _one_by_one(_fresh(case), name) for name in TIMED}
        fresh = _fresh(case)
        # repr: the same float bit for bit (0.0 and -0.0 told apart), None where the definition gives none
        assert {k: repr(v) for k, v in timed_round_values(fresh).items()} == {k: repr(v) for k, v in expected.items()}
        assert all("sorted_per_call" not in r.__dict__ for r in fresh.rounds)  # one sort, no per-call tuples
        known = _fresh(case)
        for r in known.rounds:
            _ = r.sorted_per_call  # the per-call tuples already made (by a comparison): read, the same floats
        assert {k: repr(v) for k, v in timed_round_values(known).items()} == {k: repr(v) for k, v in expected.items()}


def test_wanted_names_give_those_metrics_and_the_same_floats() -> None:
    rng = random.Random(12)
    names = sorted(TIMED)
    for case in _varied_cases(300):
        wanted = set(rng.sample(names, rng.randint(0, len(names)))) | {"memory.peak_rss"}  # an untimed name too
        every = timed_round_values(_fresh(case))
        some = timed_round_values(_fresh(case), wanted)
        assert set(some) == wanted & set(TIMED)
        assert {k: repr(v) for k, v in some.items()} == {k: repr(every[k]) for k in some}


def test_prepared_rows_hold_the_round_statistics_of_the_metrics_own_values() -> None:
    cases = [replace(c, metrics=make_case("m", 1e-3).metrics) for c in _varied_cases(200)]
    prepared = prepare_run(make_run([_fresh(c) for c in cases]))
    rows = iter(prepared.rows)
    for case in cases:
        for metric in case.metrics:
            row = next(rows)
            assert row[:2] == (case.id, metric.name)
            expected = _round_stats(_one_by_one(_fresh(case), metric.name)) if metric.name in TIMED else (None,) * 3
            assert repr(row[-3:]) == repr(expected)
    assert next(rows, None) is None
    assert any(row[-3] is not None for row in prepared.rows) and any(row[-3] is None for row in prepared.rows)
