"""The workload definition API: grid, per-device values, skip predicates, validation, run-time skip, checks."""

from __future__ import annotations

import numpy as np
import pytest

import perfci
from perfci.errors import WorkloadDefinitionError
from perfci.workloads.api import MAX_GRID, SkipCase, Workload, WorkloadContext
from perfci.workloads.checks import Tolerance, assert_close


def _setup(ctx: WorkloadContext, **params: object) -> object:
    return lambda: None


def test_grid_is_the_cartesian_product_in_declaration_order() -> None:
    w = perfci.workload(params={"n": [1, 2], "dtype": ["f32", "bf16"]})(_setup)
    assert w.grid() == [
        {"n": 1, "dtype": "f32"},
        {"n": 1, "dtype": "bf16"},
        {"n": 2, "dtype": "f32"},
        {"n": 2, "dtype": "bf16"},
    ]
    assert [c.id for c in w.cases("file", "src")][:2] == [
        "file._setup[n=1,dtype=f32]@cpu",
        "file._setup[n=1,dtype=bf16]@cpu",
    ]


def test_a_grid_past_the_limit_is_refused_before_it_is_made() -> None:
    """A grid of a million combinations took 80 s to list; the limit is per device, and the limit itself is allowed."""
    at_limit = perfci.workload(params={"a": list(range(100)), "b": list(range(100))})(_setup)
    assert len(at_limit.grid()) == MAX_GRID == 10_000
    w = perfci.workload(
        params={"a": {"cpu": [1], "cuda": list(range(101))}, "b": list(range(100))}, devices=["cpu", "cuda"]
    )(_setup)
    assert len(w.grid("cpu")) == 100
    with pytest.raises(WorkloadDefinitionError, match=r"'_setup': its parameter grid has 10,100 combinations on cuda"):
        w.cases("f", "src")


def test_per_device_values_and_device_major_order() -> None:
    w = perfci.workload(params={"n": {"cpu": [8], "cuda": [64, 128]}, "k": [1]}, devices=["cpu", "cuda"])(_setup)
    assert [c.id for c in w.cases("k", "src")] == [
        "k._setup[n=8,k=1]@cpu",
        "k._setup[n=64,k=1]@cuda",
        "k._setup[n=128,k=1]@cuda",
    ]


def test_skip_predicate_removes_combinations_and_gives_reasons() -> None:
    def skip(device: str, n: int, dtype: str) -> bool | str | None:
        if dtype == "bf16" and device == "cpu":
            return "no bf16 on this CPU"
        return n > 2

    w = perfci.workload(params={"n": [1, 4], "dtype": ["f32", "bf16"]}, devices=["cpu", "cuda"], skip=skip)(_setup)
    ids = [c.id for c in w.cases("s", "src")]
    assert ids == ["s._setup[n=1,dtype=f32]@cpu", "s._setup[n=1,dtype=f32]@cuda", "s._setup[n=1,dtype=bf16]@cuda"]
    reasons = {spec.id: r for spec, r in w.all_cases("s", "src")}
    assert reasons["s._setup[n=1,dtype=bf16]@cpu"] == "no bf16 on this CPU"
    assert reasons["s._setup[n=4,dtype=f32]@cuda"] == "skipped by the workload's skip predicate"


def test_skip_predicate_with_wrong_signature_is_a_definition_error() -> None:
    w = perfci.workload(params={"n": [1]}, skip=lambda n: False)(_setup)
    with pytest.raises(WorkloadDefinitionError, match="skip predicate"):
        w.cases("s", "src")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"params": {"n": 5}}, "non-empty list"),
        ({"params": {"n": []}}, "non-empty list"),
        ({"params": {"n": "abc"}}, "non-empty list"),
        ({"params": {"n": [[1, 2]]}}, "not a str, int, finite float or bool"),
        ({"params": {"x": [float("nan")]}}, "not a str, int, finite float or bool"),  # fuzzing: lost every result
        ({"params": {"n": [1, 1]}}, "twice"),
        ({"params": {"n": {"cpu": [1]}}, "devices": ["cpu", "cuda"]}, "no values for device 'cuda'"),
        ({"devices": []}, "at least one device"),
        ({"devices": "cpu"}, "at least one device"),
        ({"timing": {"budget": 1.0}}, "unknown timing setting 'budget'"),
        # fuzzing: values of the wrong kind or range failed every case in its worker, with a traceback
        ({"timing": {"budget_s": -1.0}}, r"budget_s = -1.0 is not between 1e-06 and 3600"),
        ({"timing": {"budget_s": float("nan")}}, "budget_s must be a number, not nan"),
        ({"timing": {"min_samples": "10"}}, "min_samples must be an integer, not '10'"),
        ({"timing": {"min_samples": 2.5}}, "min_samples must be an integer"),
        ({"timing": {"max_samples": True}}, "max_samples must be an integer, not True"),
        ({"timing": {"confidence": 1.0}}, "confidence = 1.0 is not between 0.5 and 0.999999"),
        ({"timing": {"min_samples": 20, "max_samples": 5}}, r"max_samples \(5\) is below min_samples \(20\)"),
        ({"timing": {"speed_reference": 1}}, "speed_reference must be true or false"),
        ({"timing": {"gpu_mode": "lukewarm"}}, "unknown GPU timing mode 'lukewarm'"),
        ({"timing": {"gpu_mode": 3}}, "gpu_mode must be a text"),
        ({"params": {"gpu_mode": ["hot", "tepid"]}, "devices": ["cuda"]}, "unknown GPU timing mode 'tepid'"),
        ({"params": {"gpu_mode": {"cuda": ["sustained", "x"]}}, "devices": ["cuda"]}, "unknown GPU timing mode 'x'"),
        # an int suite measured every case, then the results file could not be written: the whole run lost
        ({"suite": 3}, "suite=3 is not a suite name"),
        ({"tags": [1]}, r"tags=\[1\] is not a list of tags"),
        ({"tags": "gemm"}, "tags='gemm' is not a list of tags"),  # was four one-letter tags
        ({"name": 3}, "name=3 is not a workload name"),
        ({"name": "x@cuda"}, "name='x@cuda' is not a workload name"),  # an id `-k @cuda` matched
        ({"name": ""}, "name='' is not a workload name"),
    ],
)
def test_invalid_declarations_are_rejected(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(WorkloadDefinitionError, match=message):
        perfci.workload(**kwargs)(_setup)  # type: ignore[call-overload]


def test_timing_values_in_range_and_every_gpu_mode_are_accepted() -> None:
    def setup(ctx: WorkloadContext, gpu_mode: str) -> object:
        return lambda: None

    modes = ["hot", "cold", "graph", "sustained", "sustained-cold"]
    timing = {"budget_s": 0.01, "min_samples": 3, "max_samples": 3, "warmup_s": 0, "confidence": 0.99}
    wl = perfci.workload(params={"gpu_mode": modes}, devices=["cuda"], timing=timing)(setup)
    assert len(wl.cases("f", "src")) == 5


def test_parameter_must_be_an_argument_of_the_setup() -> None:
    def setup(ctx: WorkloadContext, m: int) -> object:
        return lambda: None

    with pytest.raises(WorkloadDefinitionError, match="parameter 'n' is not an argument"):
        perfci.workload(params={"n": [1]})(setup)


def test_bare_decorator_and_options() -> None:
    @perfci.workload
    def plain(ctx: WorkloadContext) -> object:
        return lambda: 1

    assert isinstance(plain, Workload)
    assert [c.id for c in plain.cases("f", "src")] == ["f.plain@cpu"]
    named = perfci.workload(name="other", suite="mine", tags=["a"], timing={"budget_s": 0.1})(_setup)
    spec = named.cases("f", "src")[0]
    assert (spec.workload, spec.suite, spec.tags, named.timing) == ("f.other", "mine", ("a",), {"budget_s": 0.1})


def test_ctx_skip_raises_skipcase_with_reason() -> None:
    ctx = WorkloadContext("cuda", {}, 0)
    with pytest.raises(SkipCase, match="triton is not installed"):
        ctx.skip("triton is not installed")


def test_check_close_sets_a_check_that_raises_assertion_error() -> None:
    ctx = WorkloadContext("cpu", {}, 0)
    out = np.array([1.0, 2.0, 3.0])
    ctx.check_close(lambda: out + 1e-7, out, Tolerance(rtol=1e-6, atol=1e-6))
    assert ctx.check is not None
    ctx.check()
    ctx.check_close(lambda: out + 0.5, out, Tolerance(rtol=1e-6, atol=1e-6), what="kernel")
    with pytest.raises(AssertionError, match=r"kernel: 3 of 3 values off; worst at \(0,\)"):
        ctx.check()


def test_assert_close_modes() -> None:
    e = np.linspace(-1.0, 1.0, 100)
    assert_close(e * 1.01, e, Tolerance(max_rel_l2=0.02))
    with pytest.raises(AssertionError, match=r"relative L2 error 0\.1 exceeds"):
        assert_close(e * 1.1, e, Tolerance(max_rel_l2=0.02))
    with pytest.raises(AssertionError, match="shape"):
        assert_close(e[:5], e, Tolerance())
    with pytest.raises(AssertionError, match="non-finite"):
        assert_close(np.full(3, np.nan), np.zeros(3), Tolerance(atol=1.0))
    assert_close([e, e], (e, e), Tolerance())
    with pytest.raises(AssertionError, match="2 outputs"):
        assert_close([e, e], e, Tolerance())


def test_an_async_function_returned_for_timing_is_refused() -> None:
    """Timed, it only made a coroutine (never awaited): 1.2 us a call, recorded ok."""
    from perfci.workloads.api import LocatedFailure, WorkloadContext

    @perfci.workload
    def coro(ctx):  # type: ignore[no-untyped-def]
        async def step() -> None:
            pass

        return step

    with pytest.raises(LocatedFailure, match="returned an async or generator function"):
        coro(WorkloadContext(device="cpu", params={}, seed=0))

    class AsyncCall:
        async def __call__(self) -> None:
            pass

    def counting() -> object:
        yield 1

    for made in (AsyncCall(), counting):
        returned = perfci.workload(name="w")(lambda ctx, made=made: made)
        with pytest.raises(LocatedFailure, match="returned an async or generator function"):
            returned(WorkloadContext(device="cpu", params={}, seed=0))
    with pytest.raises(WorkloadDefinitionError, match="its set-up is an async function"):

        @perfci.workload
        async def async_set_up(ctx):  # type: ignore[no-untyped-def]
            return lambda: None


def test_a_teardown_that_fails_says_it_was_the_teardown() -> None:
    from perfci.engine.case_session import _tear_down
    from perfci.workloads.api import LocatedFailure

    def boom() -> None:
        raise RuntimeError("td boom")

    with pytest.raises(LocatedFailure, match=r"^its teardown raised RuntimeError: td boom \(at test_workloads_api.py:"):
        _tear_down(boom)
    with pytest.raises(LocatedFailure, match=r"^ctx.teardown = 5 is not callable"):
        _tear_down(5)
    done: list[int] = []
    _tear_down(lambda: done.append(1))
    assert done == [1]


def test_a_set_up_that_sets_its_own_thread_count_is_noted() -> None:
    torch = pytest.importorskip("torch")
    from perfci.engine.case_session import THREADS_NOTE, _note_own_threads
    from perfci.workloads.api import WorkloadContext

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        ctx = WorkloadContext(device="cpu", params={}, seed=0)
        _note_own_threads(ctx, 1)
        assert ctx.notes[THREADS_NOTE].startswith("the set-up set 2 torch threads; measured with 1")
        quiet = WorkloadContext(device="cpu", params={}, seed=0)
        _note_own_threads(quiet, 2)
        _note_own_threads(quiet, 0)  # 0: the library's default, nothing overridden
        assert THREADS_NOTE not in quiet.notes
    finally:
        torch.set_num_threads(before)
