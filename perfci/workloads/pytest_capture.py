"""pytest tests run in this process, keeping the callable each measures (`perfci ab --pytest`, in the worker).

Each test runs once, with its `benchmark` and `perf` fixtures replaced by
recorders: `benchmark(fn, *args)`, `benchmark.pedantic(target, ...)` and `perf(fn)` call what they are given
once (the test gets its value, as pytest-benchmark returns it) and keep it. The worker then times the kept
callable with the engine's own warm-up, calibration and sampling, like a workload's. The test's fixtures are
torn down when the test ends, before the callable is timed: a callable that needs a fixture still open (a
connection) fails, and its case is an `error` row.

A worker runs all the measuring tests of a file in one session, when the first of them is wanted, and keeps what
each handed over for the file's other cases (`FileTests`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from perfci.workloads.api import LocatedFailure, SkipCase

# pytest's own options for a session run inside perfci: the project's `addopts` (`-n auto`, `--benchmark-*`) and
# $PYTEST_ADDOPTS are left out; nothing is written into the checkout (the cache); asserts are not rewritten and
# hypothesis's plugin is not loaded (on this 2-core machine they took a session's start from 0.2 s to 1.3 s; a test
# using hypothesis's `@given` runs without the plugin); perfci's own plugin is not loaded either (its `perf` is
# replaced here, and it would read the project's configuration for nothing)
SESSION_OPTIONS = (
    "-q", "--no-header", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:perfci",
    "--assert=plain", "-o", "addopts=",
)  # fmt: skip
EXIT_WORDS = {2: "interrupted", 3: "an internal error", 4: "a usage error"}


@dataclass(frozen=True)
class Captured:
    """What a test handed to its measuring fixture: the callable, its declared work, and which fixture."""

    fn: Callable[[], object]
    how: str  # "benchmark" | "benchmark.pedantic" | "perf"
    flops: float | None = None
    nbytes: float | None = None


class Recorder:
    """The callables one test handed to its fixtures, in order."""

    def __init__(self) -> None:
        self.calls: list[Captured] = []

    def keep(self, captured: Captured) -> object:
        self.calls.append(captured)
        return captured.fn()


class BenchmarkFace:
    """What pytest-benchmark's `benchmark` fixture tells a test about itself (its group, name, parameters and
    `extra_info`): shared by the fixture perfci serves (pytest_plugin) and the one that records for an A/B."""

    def __init__(self, node: Any, disabled: bool = False) -> None:
        marker = node.get_closest_marker("benchmark")
        self.group: str | None = marker.kwargs.get("group") if marker is not None else None
        self.extra_info: dict[str, Any] = {}
        self.name: str = node.name
        self.fullname: str = node.nodeid
        callspec = getattr(node, "callspec", None)
        self.params: dict[str, Any] | None = dict(callspec.params) if callspec is not None else None
        self.param: str | None = getattr(callspec, "id", None)
        self.disabled = disabled
        self.skipped = False  # pytest-benchmark's report hook sets it


class CapturingBenchmark(BenchmarkFace):
    """pytest-benchmark's `benchmark` fixture as far as a test body uses it, recording instead of timing."""

    def __init__(self, recorder: Recorder, node: Any) -> None:
        super().__init__(node)
        self._recorder = recorder

    @property
    def enabled(self) -> bool:
        return not self.disabled

    def __call__(self, function_to_benchmark: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        call = functools.partial(function_to_benchmark, *args, **kwargs)
        return self._recorder.keep(Captured(call, "benchmark"))

    def pedantic(
        self,
        target: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        teardown: Callable[..., Any] | None = None,
        rounds: int = 1,
        warmup_rounds: int = 0,
        iterations: int = 1,
    ) -> Any:
        """The target is timed with its arguments; with a `setup`, each timed call runs the setup first (and the
        teardown after), so both are in the time of both revisions."""
        del rounds, warmup_rounds, iterations  # perfci calibrates the calls per sample and stops by its own rule
        given_kwargs = kwargs or {}
        if setup is None and teardown is None:
            return self._recorder.keep(Captured(functools.partial(target, *args, **given_kwargs), "benchmark.pedantic"))

        def call() -> Any:
            made = setup() if setup is not None else None
            a, k = (tuple(made[0]), dict(made[1])) if made else (args, given_kwargs)
            value = target(*a, **k)
            if teardown is not None:
                teardown(*a, **k)
            return value

        return self._recorder.keep(Captured(call, "benchmark.pedantic"))

    def weave(self, *_args: Any, **_kwargs: Any) -> None:
        raise NotImplementedError("benchmark.weave (aspect weaving) cannot be measured by perfci ab")


class CapturingPerf:
    """perfci's `perf` fixture, recording instead of timing."""

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder

    def __call__(
        self,
        fn: Callable[[], object],
        *,
        name: str | None = None,
        flops: float | None = None,
        bytes: float | None = None,
    ) -> None:
        del name  # one callable per test (see run_test)
        self._recorder.keep(Captured(fn, "perf", flops, bytes))


@functools.cache
def _benchmark_class() -> type[CapturingBenchmark]:
    """`CapturingBenchmark`, also an instance of pytest-benchmark's `BenchmarkFixture` when that is installed (its
    report hook refuses any other `benchmark`)."""
    try:
        from pytest_benchmark.fixture import BenchmarkFixture
    except ImportError:
        return CapturingBenchmark
    return type("CapturingBenchmark", (CapturingBenchmark, BenchmarkFixture), {})


class _Fixtures:
    """Registered at configure time, after every entry-point plugin, so these fixtures win. Each test gets its own
    recorder (by the part of its node id after the file, which does not depend on pytest's rootdir)."""

    def __init__(self, recorders: dict[str, Recorder]) -> None:
        self.recorders = recorders

    def _recorder(self, request: pytest.FixtureRequest) -> Recorder:
        return self.recorders.setdefault(test_key(request.node.nodeid), Recorder())

    @pytest.fixture
    def benchmark(self, request: pytest.FixtureRequest) -> CapturingBenchmark:
        return _benchmark_class()(self._recorder(request), request.node)

    @pytest.fixture
    def perf(self, request: pytest.FixtureRequest) -> CapturingPerf:
        return CapturingPerf(self._recorder(request))


def test_key(nodeid: str) -> str:
    """`test_x[1]` of `bench/test_b.py::test_x[1]`: a test within its file."""
    return nodeid.partition("::")[2]


class _Session:
    """What one pytest session over a file did: each test's recorder and reports, and collection failures."""

    def __init__(self) -> None:
        self.recorders: dict[str, Recorder] = {}
        self.reports: dict[str, list[Any]] = {}
        self.collect_errors: list[str] = []

    def pytest_configure(self, config: pytest.Config) -> None:
        config.pluginmanager.register(_Fixtures(self.recorders), "perfci-ab-fixtures")

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Only the tests that measure something run."""
        from perfci.workloads.pytest_cases import MEASURING_FIXTURES

        keep = [i for i in items if any(f in getattr(i, "fixturenames", ()) for f in MEASURING_FIXTURES)]
        left = [i for i in items if i not in keep]
        if left:
            config.hook.pytest_deselected(items=left)
        items[:] = keep

    def pytest_runtest_logreport(self, report: Any) -> None:
        self.reports.setdefault(test_key(report.nodeid), []).append(report)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collect_errors.append(failure_line(report))

    def outcome(self, key: str) -> Captured | BaseException:
        """The test's one measured callable, or the exception that makes its case an error (or a skip)."""
        reports = self.reports.get(key, [])
        for report in reports:
            if report.failed:
                return LocatedFailure(f"the test failed ({report.when}): {failure_line(report)}")
            if report.skipped and report.when in ("setup", "call"):
                longrepr = report.longrepr
                reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else "skipped"
                return SkipCase(str(reason).removeprefix("Skipped: "))
        if not any(r.when == "call" for r in reports):
            return LocatedFailure(f"pytest did not run the test {key!r}")
        calls = self.recorders[key].calls if key in self.recorders else []
        if not calls:
            return LocatedFailure(
                "the test passed without calling benchmark(...), benchmark.pedantic(...) or perf(...)"
            )
        if len(calls) > 1:
            return LocatedFailure(
                f"the test measured {len(calls)} callables; perfci ab measures one a test: split it into several tests"
            )
        return calls[0]


@contextlib.contextmanager
def quiet_session(silent: bool = False) -> Iterator[None]:
    """pytest's output to stderr (stdout may carry a protocol), or nowhere when `silent` (a listing, whose
    errors the caller collects and reports itself), without $PYTEST_ADDOPTS."""
    saved = os.environ.pop("PYTEST_ADDOPTS", None)
    try:
        with (
            open(os.devnull, "w") if silent else contextlib.nullcontext(sys.stderr) as sink,
            contextlib.redirect_stdout(sink),
        ):
            yield
    finally:
        if saved is not None:
            os.environ["PYTEST_ADDOPTS"] = saved


_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')


def failure_line(report: Any) -> str:
    """Where and how a test failed: `test_b.py:31: AssertionError` (the crash pytest reports), else the last line."""
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None:
        first = (str(crash.message).strip().splitlines() or ["no message"])[0]  # the rest: pytest's explanation
        return f"{Path(str(crash.path)).name}:{crash.lineno}: {first[:2000]}"
    text = str(getattr(report, "longreprtext", "") or "").strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("E ")]
    last = (errors[-1][1:].strip() if errors else lines[-1] if lines else "no message")[:2000]
    # a file that does not compile: pytest's text names the line (`File ".../test_b.py", line 46`), its last does not
    places = [m for ln in lines if (m := _FILE_LINE.search(ln))]
    return f"{Path(places[-1][1]).name}:{places[-1][2]}: {last}" if places else last


class FileTests:
    """The measuring tests of one file, run once in this process, in one pytest session, when the first of them is
    wanted (a session per test cost 0.2-0.3 s each on the 2-core machine under load); later cases of the file take
    their callable from it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._session: _Session | None = None
        self._code = 0

    def callable_of(self, key: str) -> Captured:
        """The callable the test `key` measured; its failure, skip or lack of a measurement is raised (the worker
        makes it this case's error)."""
        if self._session is None:
            self._session = _Session()
            with quiet_session():
                self._code = int(pytest.main([str(self.path), *SESSION_OPTIONS], plugins=[self._session]))
        if self._session.collect_errors:
            raise LocatedFailure(f"pytest could not collect {self.path.name}: {self._session.collect_errors[0]}")
        found = self._session.outcome(key)
        if key not in self._session.reports and self._code in EXIT_WORDS:
            raise LocatedFailure(
                f"pytest stopped with {EXIT_WORDS[self._code]} (exit code {self._code}) before running the test; "
                f"run pytest on {self.path.name} to see why"
            )
        if isinstance(found, BaseException):
            raise found
        return found


def file_tests(path: Path) -> FileTests:
    """This process's `FileTests` of `path`, kept in `sys.modules` as workload files are (workloads/discovery.py
    `load_source`), so that every case of the file finds the same session."""
    name = f"perfci_pytest_{abs(hash(str(path.resolve())))}"
    holder = sys.modules.get(name)
    if holder is None:
        holder = types.ModuleType(name)
        holder.tests = FileTests(path)  # type: ignore[attr-defined]
        sys.modules[name] = holder
    tests: FileTests = holder.tests  # type: ignore[attr-defined]
    return tests
