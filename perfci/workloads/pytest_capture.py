"""pytest tests run in this process, keeping the callable each measures (`perfci ab --pytest`, in the worker).

Each test runs once, with its `benchmark` and `perf` fixtures replaced by
recorders: `benchmark(fn, *args)`, `benchmark.pedantic(target, ...)` and `perf(fn)` call what they are given
(the test gets the first call's value, as pytest-benchmark returns it) and keep it. The worker then times the kept
callable with the engine's own warm-up, calibration and sampling, like a workload's. The test's fixtures are
torn down when the test ends, before the callable is timed: a callable that needs a fixture still open (a
connection) fails, and its case is an `error` row. A callable whose time a call after the test differs from its
time inside it by `CONTEXT_RATIO` or more (a `monkeypatch`, a mock or a `with` block around the call that the
test's end undid) is an `error` row too: perfci would time another code path than the test's (`check_context`).
torch's grad and inference modes at the call (`torch.no_grad()`, `torch.inference_mode()` around it) are
recorded and entered again around every timed call (`TorchModes`, `under_modes`).

A worker keeps one pytest session per file (`FileTests`), and runs in it only the tests whose cases it is given,
each when its case is set up: a test that crashes the process (a segmentation fault) takes its own case with it,
not the file's other tests, which the next worker runs without it. The session waits between tests in a greenlet
of its own (pytest's capturing is off in these sessions), and ends when the worker's job is done
(`close_sessions`), its wider-scope fixtures torn down then.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import re
import sys
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import greenlet
import pytest

from perfci.metrics.durations import format_seconds
from perfci.workloads.api import LocatedFailure, SkipCase
from perfci.workloads.pytest_addopts import FilterAddopts
from perfci.workloads.torch_modes import TorchModes, mode_guard, torch_modes

# pytest's own options for a session run inside perfci: the project's `addopts` are kept, less what would change
# what runs or how it is timed in this process (workloads/pytest_addopts.py), and $PYTEST_ADDOPTS is left out;
# nothing is written into the checkout (the cache); asserts are not rewritten and hypothesis's plugin is not loaded
# (on this 2-core machine they took a session's start from 0.2 s to 1.3 s; a test using hypothesis's `@given` runs
# without the plugin); perfci's own plugin is not loaded either (its `perf` is replaced here, and it would read the
# project's configuration for nothing)
SESSION_OPTIONS = (
    "-q", "--no-header", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:perfci",
    "--assert=plain",
)  # fmt: skip
# a worker's sessions: no capturing (pytest's would hold fd 0, the worker's protocol, between tests)
WORKER_SESSION_OPTIONS = (*SESSION_OPTIONS, "--capture=no")
EXIT_WORDS = {2: "interrupted", 3: "an internal error", 4: "a usage error"}
# the calls timed inside the test and again after it (`call_times`): until this much time, at most this many calls
CONTEXT_BURST_S = 0.05
CONTEXT_BURST_CALLS = 20
# a first call longer than this is not repeated inside the test (a model's forward: the test's own time)
CONTEXT_REPEAT_BELOW_S = 0.1
CONTEXT_RATIO = 3.0  # a call this many times slower (or faster) after the test than in it: another code path
# bursts timed after the test before a slower call is called another code path: a busy machine (a 2.4 µs call read
# 3.5x slower in one burst, in CI) slows one burst, a changed code path slows every one
CONTEXT_BURSTS = 3


@dataclass(frozen=True)
class Captured:
    """What a test handed to its measuring fixture: the callable, its declared work, and which fixture."""

    fn: Callable[[], object]
    how: str  # "benchmark" | "benchmark.pedantic" | "perf"
    flops: float | None = None
    nbytes: float | None = None
    # the fastest call timed inside the test (`call_times`, after the first call), and whether it was repeated
    # there (a first call under CONTEXT_REPEAT_BELOW_S) or timed once (the first call: not checked)
    in_test_s: float | None = None
    in_test_warm: bool = False
    modes: TorchModes | None = None  # torch's grad and inference modes at the call, where torch was imported


def times_after_test(captured: Captured, calls: int) -> float:
    """`call_times` of the kept callable now, inside its test's torch modes entered once around the burst: what
    `check_context` compares with its time inside the test (the per-call entry of `under_modes` is not the test's
    code path: it read a 290 ns call 6.6x slower)."""
    guard = mode_guard(captured.modes)
    with guard if guard is not None else contextlib.nullcontext():
        return call_times(captured.fn, calls)


def call_times(fn: Callable[[], object], calls: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """The fastest of `calls` timed calls of `fn` (at least one), stopping early past CONTEXT_BURST_S."""
    best = float("inf")
    start = clock()
    for _ in range(max(1, calls)):
        t0 = clock()
        fn()
        t1 = clock()
        best = min(best, t1 - t0)
        if t1 - start >= CONTEXT_BURST_S:
            break
    return best


def check_context(captured: Captured, after: Callable[[int], float]) -> None:
    """Raise LocatedFailure when the kept callable's time a call after its test (`after(calls)`: `call_times` of it
    now) is CONTEXT_RATIO times its time inside it, or a CONTEXT_RATIO-th of it: the test's context changed what
    the call does (a monkeypatch or mock undone, a `with` block exited), so timing it after the test would compare
    another code path than the test measures. A callable whose first call took CONTEXT_REPEAT_BELOW_S or more is
    not checked (it was not repeated inside the test). A slower call is timed in up to CONTEXT_BURSTS bursts and
    the fastest is kept (a busy machine slows a burst, not every one); a faster one cannot be a busy machine."""
    inside = captured.in_test_s
    if not captured.in_test_warm or inside is None or inside <= 0:
        return
    after_s = after(CONTEXT_BURST_CALLS)
    for _ in range(CONTEXT_BURSTS - 1):
        if after_s / inside < CONTEXT_RATIO:
            break
        after_s = min(after_s, after(CONTEXT_BURST_CALLS))  # slower: timed again, the fastest burst kept
    ratio = after_s / inside
    if ratio >= CONTEXT_RATIO or ratio <= 1 / CONTEXT_RATIO:
        raise LocatedFailure(
            f"the call took {format_seconds(inside)} inside the test and {format_seconds(after_s)} after it "
            f"({ratio:.3g}x): "
            "the test's fixtures or a `with` block around the call (a monkeypatch, a mock, a setting) change what it "
            "does, and perfci ab times the call after the test has ended; measure a callable that sets up what it "
            "needs itself, or compare with the pytest plugin (docs/pytest.md)"
        )


class Recorder:
    """The callables one test handed to its fixtures, in order, each with its time a call inside the test."""

    def __init__(self) -> None:
        self.calls: list[Captured] = []

    def keep(self, captured: Captured, clock: Callable[[], float] = time.perf_counter) -> object:
        modes = torch_modes()
        t0 = clock()
        value = captured.fn()
        first = clock() - t0
        warm = first < CONTEXT_REPEAT_BELOW_S
        inside = call_times(captured.fn, CONTEXT_BURST_CALLS, clock) if warm else first
        self.calls.append(replace(captured, in_test_s=inside, in_test_warm=warm, modes=modes))
        return value


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
        self.wanted: str | None = None  # the test to run next (FileTests); None: the session ends

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        """Run the tests one at a time, as they are wanted, waiting in between (in the greenlet this session runs
        in, `FileTests`): only the tests whose cases this worker measures run, in the order it sets them up."""
        if session.testsfailed or session.config.option.collectonly:
            return True  # collection errors: said by `collect_errors`
        items = {test_key(i.nodeid): i for i in session.items}
        order = list(session.items)
        here = greenlet.getcurrent()
        while self.wanted is not None:
            item = items.get(self.wanted)
            if item is not None and self.wanted not in self.reports:
                state = getattr(session, "_setupstate", None)
                if state is not None:  # a test out of the file's order: the scopes it is not in are torn down
                    state.teardown_exact(item)
                # the next test in the file, or (after the last) the first: the session and module stay set up
                after = order.index(item) + 1
                nextitem = order[after] if after < len(order) else order[0] if order[0] is not item else None
                item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            if here.parent is None:
                break
            here.parent.switch()
        state = getattr(session, "_setupstate", None)
        if state is not None:
            state.teardown_exact(None)
        return True

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
    """The measuring tests of one file, in one pytest session of this process that runs each test when its case is
    wanted (a session per test cost 0.2-0.3 s each on the 2-core machine under load) and waits in a greenlet in
    between; a test already run gives its outcome again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._session = _Session()
        self._runner: greenlet.greenlet | None = None
        self._code: int | None = None  # pytest's exit code, once the session has ended

    def _main(self) -> None:
        plugins = [self._session, FilterAddopts()]
        self._code = int(pytest.main([str(self.path), *WORKER_SESSION_OPTIONS], plugins=plugins))

    def _run(self, key: str | None) -> None:
        """Run the test `key` in the session (started at the first call); None ends the session."""
        if self._code is not None:
            return
        if self._runner is None:
            if key is None:
                return
            self._runner = greenlet.greenlet(self._main)
            _OPEN.append(self)
        self._session.wanted = key
        with quiet_session():  # pytest's output while it runs, not while it waits
            self._runner.switch()

    def close(self) -> None:
        """End the session: the fixtures of wider scope are torn down and pytest finishes."""
        with contextlib.suppress(Exception):
            self._run(None)

    def callable_of(self, key: str) -> Captured:
        """The callable the test `key` measured; its failure, skip or lack of a measurement is raised (the worker
        makes it this case's error)."""
        if key not in self._session.reports:
            self._run(key)
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


_OPEN: list[FileTests] = []  # the sessions this process started, to end at its exit (`close_sessions`)


def close_sessions() -> None:
    """End every session this process started (the worker calls it as it exits, with `os._exit`: atexit handlers
    do not run there): their session- and module-scoped fixtures are torn down."""
    while _OPEN:
        _OPEN.pop().close()


atexit.register(close_sessions)  # a process that ends the ordinary way


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
