"""pytest-benchmark's `benchmark` fixture, served by perfci under `--perfci-out` / `--perfci-compare`.

Tests written for pytest-benchmark run unchanged and become perfci cases (id: the test's id, with its
parameters, `@cpu`; the test's id is its node id with the file relative to the project root,
workloads/pytest_ids.py):

- `benchmark(fn, *args, **kwargs)`: measured like `perf(fn)` (warm-up, calibrated iterations, several rounds);
  returns what `fn` returns, as pytest-benchmark does.
- `benchmark.pedantic(target, args=, kwargs=, setup=, teardown=, rounds=, iterations=, warmup_rounds=)`: what the
  test fixes is honoured (exactly `rounds` timed samples of `iterations` calls, `setup` before each, untimed) and
  recorded in the rounds' telemetry (`fixed`); what it leaves open is calibrated as for `benchmark(fn)`.
- `benchmark.extra_info` (kept in the rounds' telemetry), `benchmark.group` and the
  `@pytest.mark.benchmark(group=...)` marker (the case's tag `group:<name>`), `name`, `fullname`, `params`.

The case is recorded when the fixture is torn down, so `extra_info` and `group` set after the call are kept.
With pytest-benchmark installed, the fixture object is also an instance of its `BenchmarkFixture` (without its
state), because pytest-benchmark's report hook refuses any other `benchmark`; it then reports nothing for these
tests, since nothing is added to its session.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from perfci.workloads.pytest_capture import BenchmarkFace

if TYPE_CHECKING:
    from perfci.format.model import Round
    from perfci.pytest_plugin.plugin import PerfciSession

GROUP_TAG = "group:"


class UsedTwice(Exception):
    """A test called its `benchmark` fixture a second time (pytest-benchmark refuses this too)."""


class ServedBenchmark(BenchmarkFace):
    """The `benchmark` fixture of one test."""

    def __init__(self, state: PerfciSession, node: Any) -> None:
        self._state = state
        from perfci.pytest_plugin.plugin import node_test_id

        super().__init__(node, state.disabled)
        self._nodeid: str = node_test_id(state, node)
        self._rounds: tuple[Round, ...] = ()
        self._fixed: dict[str, Any] | None = None
        self._used = ""

    @property
    def enabled(self) -> bool:
        return not self.disabled

    def _use(self, mode: str) -> None:
        __tracebackhide__ = True
        if self._used:
            raise UsedTwice(f"the benchmark fixture can be used once per test; it was used already ({self._used})")
        self._used = mode

    def __call__(self, function_to_benchmark: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self._use("benchmark(...)")
        if self.disabled:
            return function_to_benchmark(*args, **kwargs)
        from perfci.pytest_plugin.measure import measure_rounds

        call = functools.partial(function_to_benchmark, *args, **kwargs)
        result = call()  # the value pytest-benchmark returns; a function that raises fails the test before timing
        self._state.start()
        self._rounds = measure_rounds(call, self._state.settings)
        return result

    def pedantic(
        self,
        target: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        teardown: Callable[..., Any] | None = None,
        rounds: int | None = None,
        warmup_rounds: int = 0,
        iterations: int | None = None,
    ) -> Any:
        """pytest-benchmark's `pedantic`; `rounds` and `iterations` left out are perfci's to choose."""
        self._use("benchmark.pedantic(...)")
        _check_count("rounds", rounds, 1)
        _check_count("iterations", iterations, 1)
        _check_count("warmup_rounds", warmup_rounds, 0)
        if setup is not None and iterations is not None and iterations > 1:
            raise ValueError("benchmark.pedantic: iterations above 1 cannot be used with a setup function")
        prepare = _arguments(args, kwargs or {}, setup)
        if self.disabled:
            a, k = prepare()
            return target(*a, **k)
        from perfci.pytest_plugin.measure import FixedPlan, measure_fixed

        plan = FixedPlan(rounds=rounds, iterations=iterations, warmup_rounds=warmup_rounds, setup=setup is not None)
        self._state.start()
        self._rounds, result = measure_fixed(target, prepare, teardown, plan, self._state.settings, time.perf_counter)
        self._fixed = plan.telemetry()
        return result

    def weave(self, *_args: Any, **_kwargs: Any) -> None:
        raise NotImplementedError(
            "benchmark.weave is pytest-benchmark's own (aspect weaving); perfci does not serve it: "
            "run this test without --perfci-out/--perfci-compare"
        )

    def record(self) -> None:
        """At teardown: the case, with the test's final `extra_info` and `group`."""
        if not self._rounds:
            return
        from dataclasses import replace

        from perfci.format.model import CaseResult, CaseSpec, CaseStatus
        from perfci.metrics import case_metrics

        extra = _json_safe(self.extra_info)
        rounds = tuple(
            replace(
                r,
                telemetry={
                    **r.telemetry,
                    "pytest_benchmark": True,
                    **({"extra_info": extra} if extra else {}),
                    **({"fixed": self._fixed} if self._fixed else {}),
                },
            )
            for r in self._rounds
        )
        tags = (f"{GROUP_TAG}{self.group}",) if self.group else ()
        spec = CaseSpec(workload=self._nodeid, params={}, device="cpu", source=self._nodeid, suite="pytest", tags=tags)
        self._state.record(CaseResult.of(spec, CaseStatus.OK, rounds, case_metrics(rounds, None, None)))


def _check_count(name: str, value: int | None, least: int) -> None:
    __tracebackhide__ = True
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < least):
        raise ValueError(f"benchmark.pedantic: {name} must be a whole number of at least {least}, not {value!r}")


def _arguments(
    args: tuple[Any, ...], kwargs: dict[str, Any], setup: Callable[[], Any] | None
) -> Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]:
    """What pedantic passes to its target before each call: `setup()`'s (args, kwargs) where it returns them."""
    if setup is None:
        return lambda: (args, kwargs)

    def prepare() -> tuple[tuple[Any, ...], dict[str, Any]]:
        given = setup()
        if not given:
            return args, kwargs
        if args or kwargs:
            raise TypeError("benchmark.pedantic: setup returned arguments, and args or kwargs were given too")
        a, k = given
        return tuple(a), dict(k)

    return prepare


def _json_safe(value: Any) -> Any:
    """`extra_info` as JSON can hold it: other values become their repr."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return repr(value)


# pytest-benchmark's options that write or compare its own files (option dest -> flag). While perfci serves the
# `benchmark` fixture, pytest-benchmark measures nothing: `--benchmark-json` wrote no file ("no benchmarks have been
# run"), `--benchmark-autosave` an empty run. The mix is refused before any test runs.
OWN_OUTPUTS = {
    "benchmark_json": "--benchmark-json",
    "benchmark_autosave": "--benchmark-autosave",
    "benchmark_save": "--benchmark-save",
    "benchmark_compare": "--benchmark-compare",
    "benchmark_compare_fail": "--benchmark-compare-fail",
    "benchmark_histogram": "--benchmark-histogram",
}


def own_outputs_problem(getoption: Callable[[str], Any]) -> str | None:
    """The one-line refusal when pytest-benchmark's own outputs are asked for while perfci measures the benchmark
    tests (`getoption`: pytest's `config.getoption` with a default of None); None when there are none."""
    given = [flag for dest, flag in OWN_OUTPUTS.items() if getoption(dest)]
    if not given:
        return None
    return (
        f"{given[0]} cannot be used with --perfci-out/--perfci-compare: perfci then measures the `benchmark` tests "
        "and pytest-benchmark records nothing; run pytest-benchmark's outputs in a session of their own, or use "
        "perfci's results.json (`perfci import pytest-benchmark` reads pytest-benchmark's files)"
    )


@functools.cache
def fixture_class() -> type[ServedBenchmark]:
    """`ServedBenchmark`, made an instance of pytest-benchmark's `BenchmarkFixture` too when that is installed."""
    try:
        from pytest_benchmark.fixture import BenchmarkFixture
    except ImportError:
        return ServedBenchmark
    return type("ServedBenchmark", (ServedBenchmark, BenchmarkFixture), {"__doc__": ServedBenchmark.__doc__})
