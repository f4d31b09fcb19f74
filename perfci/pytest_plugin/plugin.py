"""pytest hooks of perfci's plugin (entry point `pytest11`: `perfci`).

- `perf` fixture: `def test_x(perf): perf(fn)` measures `fn` in-process (measure.py) and records a case whose
  id is the test's id (`<test id>@cpu`; with `name=`, `<test id>::<name>@cpu`): its node id, but with the file's
  path relative to the project root rather than pytest's rootdir, which moves with the command line
  (workloads/pytest_ids.py).
- `--perfci-out DIR`: DIR/results.json, a perfci results file (`perfci compare`, `perfci report` read it).
- `--perfci-compare BASELINE`: compares with a results file through `perfci.api.compare` (the rule, thresholds,
  expected changes and files of `perfci compare`); a regression makes the session exit 1, and the verdict table
  is printed in the terminal summary. `--perfci-threshold` and `--perfci-job-noise` as `perfci compare`'s.

Only names prefixed `perf`/`perfci` are registered, so it sits beside pytest-benchmark (`benchmark`,
`--benchmark-*`). Everything heavier than the standard library is imported when first used, because pytest
imports this module in every session of an environment where perfci is installed.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from perfci.options import ALLOW_MISSING
from perfci.pytest_plugin.files import RESULTS_FILE, checked_out, expected_file, readable_baseline
from perfci.pytest_plugin.flags import add_options, plugin_settings

if TYPE_CHECKING:
    from perfci.api.compare import CompareOutcome
    from perfci.format.model import CaseError, CaseResult, GitInfo, RunResult
    from perfci.pytest_plugin.measure import InProcessSettings

CHECKPOINT_S = 10.0  # with --perfci-out, the results so far are written at most this often (`checkpoint`)
LEFT_OUT_KEY = "left_out"  # results settings: tests left out on purpose (perfci/compare/coverage.py)
NOT_A_REGRESSION_EXIT = 2  # perfci's code for a failure that is not a regression: unwritable, nothing compared


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("perfci", "perfci: performance measurements with the `perf` fixture")
    group.addoption("--perfci-out", metavar="DIR", default=None, help=f"write DIR/{RESULTS_FILE} (perfci results)")
    group.addoption(
        "--perfci-compare",
        metavar="BASELINE",
        default=None,
        help="compare with a perfci results file; a regression fails the session (exit 1)",
    )
    add_options(group)  # rounds, round time, threads, threshold, job noise, fail-on: the options table's (flags.py)
    group.addoption("--perfci-disable", action="store_true", help="call each function once, measure nothing")
    assert ALLOW_MISSING.plugin_flag is not None
    group.addoption(ALLOW_MISSING.plugin_flag, action="store_true", help=f"with --perfci-compare: {ALLOW_MISSING.help}")


@dataclass
class PerfciSession:
    """What one pytest session measured, and what its comparison decided."""

    settings: InProcessSettings
    out: Path | None
    baseline: Path | None
    threshold: float | None
    job_noise: float | None
    fail_on: str | None
    disabled: bool
    rootpath: Path
    root: Path  # the project root the case ids are relative to (workloads/pytest_ids.py)
    allow_missing: bool = False
    left_out: dict[str, str] = field(default_factory=dict)  # test id -> deselected | skipped: why (not missing)
    failures: dict[str, CaseError] = field(default_factory=dict)  # test id -> how it failed (its cases: errors)
    xfailed: set[str] = field(default_factory=set)  # test ids that failed as expected (xfail): their cases dropped
    started_at: str = ""
    cases: list[CaseResult] = field(default_factory=list)
    written: Path | None = None
    measured: RunResult | None = None  # what was written or compared, for the terminal table
    checkpointed: float | None = None  # when the results so far were last written part-way (`checkpoint`)
    identity: tuple[str, dict[str, Any], GitInfo | None] | None = None  # run id, fingerprint, commit: once
    outcome: CompareOutcome | None = None
    error: str | None = None

    @property
    def active(self) -> bool:
        """Whether this session writes or compares results (else the plugin stays out of the way)."""
        return not self.disabled and (self.out is not None or self.baseline is not None)

    def record(self, case: CaseResult) -> None:
        if any(c.id == case.id for c in self.cases):
            raise ValueError(f"perf: {case.id!r} measured twice; give each call in a test its own name=")
        self.cases.append(case)
        self.checkpoint()

    def checkpoint(self, clock: Callable[[], float] = time.monotonic) -> None:
        """With --perfci-out, the results so far written part-way (`settings.complete` false), at the first case
        and then at most every CHECKPOINT_S: a session that dies (a segmentation fault, `os._exit`) leaves the
        cases measured by then, not nothing. `finish` writes the whole file."""
        now = clock()
        if self.out is None or (self.checkpointed is not None and now - self.checkpointed < CHECKPOINT_S):
            return
        from perfci.format.schema import dump_results

        self.checkpointed = now
        with contextlib.suppress(OSError):  # the final write says why, if it fails too
            dump_results(self.run(complete=False), self.out / RESULTS_FILE)

    def failed(self, test_id: str, report: Any) -> None:
        """The test failed (after measuring: an assertion on the result, a teardown): its cases become `error`s
        with pytest's message, their rounds kept (`run`). Recorded as `ok`, such a file was a clean baseline, and
        the A/B of the same test called it an error."""
        from perfci.format.model import CaseError
        from perfci.workloads.pytest_capture import failure_line

        if test_id not in self.failures:
            self.failures[test_id] = CaseError("raised", f"the test failed ({report.when}): {failure_line(report)}")

    def _with_failures(self) -> tuple[CaseResult, ...]:
        from dataclasses import replace

        from perfci.format.model import CaseStatus

        out = []
        for case in self.cases:
            if any(case.workload == t or case.workload.startswith(f"{t}::") for t in self.xfailed):
                continue  # an expected failure is left out (`left_out`), not a measurement
            mine = (t for t in self.failures if case.workload == t or case.workload.startswith(f"{t}::"))
            test_id = next(mine, None)
            if test_id is not None and case.status is not CaseStatus.ERROR:
                case = replace(case, status=CaseStatus.ERROR, errors=(*case.errors, self.failures[test_id]))
            out.append(case)
        return tuple(out)

    def start(self) -> None:
        """Called before the first measurement: the run starts then."""
        if not self.started_at:
            from perfci.engine.runner import utc_now

            self.started_at = utc_now()

    def run(self, complete: bool = True) -> RunResult:
        from perfci.engine.runner import git_info, new_run_id, utc_now
        from perfci.format.model import RunResult
        from perfci.profilers.fingerprint import fingerprint

        if self.identity is None:  # one run id, fingerprint and commit for the checkpoints and the final file
            self.identity = (new_run_id(), fingerprint(), git_info(self.rootpath))
        run_id, fp, git = self.identity
        return RunResult(
            run_id=run_id,
            started_at=self.started_at,
            finished_at=utc_now(),
            fingerprint=fp,
            git=git,
            settings={
                "source": "pytest",
                "in_process": True,
                "rounds": self.settings.rounds,
                "budget_s": self.settings.budget_s,
                "complete": complete,
                **({LEFT_OUT_KEY: dict(self.left_out)} if self.left_out else {}),
            },
            cases=self._with_failures(),
        )

    def finish(self) -> int:
        """Write the results and compare them; the exit code the comparison's gate asks for (0 when none)."""
        if self.disabled or (self.out is None and self.baseline is None):
            return 0
        if not self._with_failures():  # none measured, or only expected failures
            return self._nothing_measured()
        from perfci.format.schema import dump_results

        run = self.measured = self.run()
        with tempfile.TemporaryDirectory(prefix="perfci-pytest-") as tmp:
            path = (self.out or Path(tmp)) / RESULTS_FILE
            try:
                dump_results(run, path)
            except OSError as exc:  # checked at configure time; what is left: no permission, a full disk, a race
                self.error = f"perfci could not write {path}: {exc.strerror or exc}"
                return NOT_A_REGRESSION_EXIT
            self.written = path if self.out is not None else None
            return self._compare(path) if self.baseline is not None else 0

    def _nothing_measured(self) -> int:
        """No test measured anything: said, and with --perfci-compare a failure (nothing compared is never a
        pass); with --perfci-out alone, nothing is written and the session's outcome stands."""
        kinds = [v.split(":", 1)[0] for v in self.left_out.values()]
        why = ", ".join(f"{kinds.count(k)} {k}" for k in ("skipped", "deselected", "xfail") if k in kinds)
        what = f"no benchmark or perf test was measured{f' ({why})' if why else ''}"
        if self.baseline is None:
            self.error = f"perfci: {what}: nothing written to {self.out}"
            return 0
        self.error = f"perfci: {what}, so nothing was compared with {self.baseline}"
        return NOT_A_REGRESSION_EXIT

    def _compare(self, candidate: Path) -> int:
        from perfci.api.compare import CompareRequest, DecisionOptions, Outputs, compare_files
        from perfci.api.settings import Settings, load_project_config
        from perfci.errors import PerfciError

        assert self.baseline is not None
        try:
            settings = Settings(dict(os.environ), load_project_config(start=self.rootpath))
            req = CompareRequest(
                baseline=self.baseline,
                candidate=candidate,
                decision=DecisionOptions(threshold=self.threshold, job_noise=self.job_noise, fail_on=self.fail_on),
                outputs=Outputs(out=self.out),
                allow_missing=self.allow_missing,
                candidate_label=None if self.out is not None else "this pytest session",  # not a deleted temp file
                expected=expected_file(self.rootpath),
            )
            self.outcome = compare_files(settings, req)
        except PerfciError as exc:
            self.error = f"perfci compare failed: {exc}"
            return exc.exit_code
        return int(self.outcome.exit_code())


SESSION_KEY = pytest.StashKey[PerfciSession]()


def pytest_configure(config: pytest.Config) -> None:
    from perfci.workloads.pytest_ids import project_root

    out, base = config.getoption("perfci_out"), config.getoption("perfci_compare")
    if base and config.getoption("perfci_disable"):  # the gate asked for, and switched off without a word
        raise pytest.UsageError(
            "--perfci-compare with --perfci-disable: nothing is measured, so nothing would be compared (a flag may "
            "come from addopts in the configuration: `-o addopts=` clears those)"
        )
    if (out or base) and not hasattr(config, "workerinput") and _xdist_on(config):
        # the workers measured and each wrote part of the results file, which the session then called empty
        raise pytest.UsageError(
            "--perfci-out and --perfci-compare measure in one process, not in pytest-xdist's workers: run the perf "
            "tests without -n (`-n 0`, or `-p no:xdist`; a flag may come from addopts: `-o addopts=` clears those)"
        )
    shared = plugin_settings(config, strict=bool(out or base))  # refused now, not after every test has run
    baseline = Path(base).resolve() if base else None
    out_folder = checked_out(out, baseline) if out else None
    if baseline is not None:
        readable_baseline(baseline)
    config.stash[SESSION_KEY] = state = PerfciSession(
        settings=shared.measure,
        out=out_folder,
        baseline=baseline,
        threshold=shared.threshold,
        job_noise=shared.job_noise,
        fail_on=shared.fail_on,
        disabled=bool(config.getoption("perfci_disable")),
        rootpath=config.rootpath,
        root=project_root(config.invocation_params.dir),
        allow_missing=bool(config.getoption("perfci_allow_missing")),
    )
    if state.active and state.out is not None and not hasattr(config, "workerinput"):
        # an earlier session's file is not this one's: were this session to die before its first measured test,
        # that file would stand, complete, as its results
        earlier = state.out / RESULTS_FILE
        if earlier.is_file() and not earlier.is_symlink():  # a link is the user's to keep (and is written through)
            with contextlib.suppress(OSError):
                earlier.unlink()
    if not config.pluginmanager.has_plugin("benchmark"):  # pytest-benchmark registers it itself
        config.addinivalue_line("markers", "benchmark(group=...): pytest-benchmark's marker; perfci reads its group")
    if state.out is not None or state.baseline is not None:
        from perfci.pytest_plugin.benchmark_fixture import own_outputs_problem

        if (problem := own_outputs_problem(lambda dest: config.getoption(dest, None))) is not None:
            raise pytest.UsageError(problem)
        # registered after every entry-point plugin, so this `benchmark` wins over pytest-benchmark's
        config.pluginmanager.register(BenchmarkTakeover(), "perfci-benchmark")


def _xdist_on(config: pytest.Config) -> bool:
    """Whether pytest-xdist runs this session's tests in workers (`-n N`, `-n auto`, `--dist ...`)."""
    return bool(config.getoption("numprocesses", None)) or config.getoption("dist", None) not in (None, "no")


class Perf:
    """The `perf` fixture: `perf(fn)` measures `fn` (no arguments) and returns the case's result."""

    def __init__(self, state: PerfciSession, nodeid: str) -> None:
        self._state = state
        self._nodeid = nodeid

    def __call__(
        self,
        fn: Callable[[], object],
        *,
        name: str | None = None,
        flops: float | None = None,
        bytes: float | None = None,  # the word the results format uses
    ) -> CaseResult | None:
        """Measure `fn`; `name` tells apart several measurements in one test; `flops`/`bytes` per call give
        FLOP/s and bandwidth. With --perfci-disable, `fn` is called once and None returned.

        Bad arguments fail this call (and so the test) at once, before anything is measured: a `name` or node id
        that UTF-8 cannot hold (a lone UTF-16 surrogate), or `flops`/`bytes` that are not a number from 0 to
        1e30 (a NaN stopped the whole session's results file from being written; a surrogate wrote a
        file that `perfci compare` refused)."""
        workload = f"{self._nodeid}::{name}" if name else self._nodeid
        if isinstance(name, str):
            _check_utf8("name", name)
        _check_utf8("the case id", workload)
        flops, bytes = _checked_work("perf(): flops=", flops), _checked_work("perf(): bytes=", bytes)
        if self._state.disabled:
            fn()
            return None
        from perfci.format.model import CaseSpec
        from perfci.pytest_plugin.measure import measured_case

        self._state.start()
        spec = CaseSpec(workload=workload, params={}, device="cpu", source=self._nodeid, suite="pytest")
        case = measured_case(spec, fn, self._state.settings, flops, bytes)
        self._state.record(case)
        return case


def _check_utf8(what: str, text: str) -> None:
    __tracebackhide__ = True  # the test's failure points at its `perf(...)` call
    from perfci.workloads.api import is_utf8  # lazily: this module is imported by every pytest session

    if not is_utf8(text):
        raise ValueError(
            f"perf(): {what} {text!r} cannot be written as UTF-8 (it holds a lone UTF-16 surrogate); "
            "names must be encodable as UTF-8"
        )


def _checked_work(argument: str, value: object) -> float | None:
    """`flops=`/`bytes=` as a float (None stays None); TypeError or ValueError naming the argument otherwise."""
    __tracebackhide__ = True
    from perfci.profilers.work import checked_work  # lazily: this module is imported by every pytest session

    return checked_work(argument, value)


@pytest.fixture
def perf(request: pytest.FixtureRequest) -> Perf:
    """Measure a callable with perfci's timing: `perf(fn)` (see docs/pytest.md)."""
    state = request.config.stash[SESSION_KEY]
    return Perf(state, node_test_id(state, request.node))


def node_test_id(state: PerfciSession, node: Any) -> str:
    """The test's id in case ids: its node id, with the file relative to the project root (workloads/pytest_ids.py)."""
    from perfci.workloads.pytest_ids import stable_test_id

    return stable_test_id(Path(node.path), node.nodeid, state.root)


class BenchmarkTakeover:
    """Serves pytest-benchmark's `benchmark` fixture (benchmark_fixture.py) when perfci writes or compares."""

    @pytest.fixture
    def benchmark(self, request: pytest.FixtureRequest) -> Iterator[Any]:
        """pytest-benchmark's fixture, measured by perfci (docs/pytest.md)."""
        from perfci.pytest_plugin.benchmark_fixture import fixture_class

        served = fixture_class()(request.config.stash[SESSION_KEY], request.node)
        yield served
        served.record()


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Deselected tests (`-k`, `-m`) are left out on purpose: their baseline cases are not missing."""
    for item in items:
        state = item.config.stash.get(SESSION_KEY, None)
        if state is not None and state.active:
            state.left_out[node_test_id(state, item)] = "deselected"


def pytest_collection_finish(session: pytest.Session) -> None:
    """`--lf` runs only the tests that failed last time and collects no file without one, reporting no
    deselection: the baseline's other tests are left out on purpose, not missing (they failed the gate)."""
    from perfci.pytest_plugin.files import baseline_tests

    state = session.config.stash.get(SESSION_KEY, None)
    if state is None or not state.active or state.baseline is None or not session.config.getoption("lf", False):
        return
    cache = session.config.cache
    if cache is None or not cache.get("cache/lastfailed", {}):  # nothing failed last time: --lf runs everything
        return
    collected = {node_test_id(state, item) for item in session.items}
    for test in sorted(baseline_tests(state.baseline) - collected):
        state.left_out.setdefault(test, "not run: --lf runs the tests that failed last time")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Skipped tests are left out on purpose too: their baseline cases are not missing (a failed test's are)."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    state = item.config.stash.get(SESSION_KEY, None)
    if state is not None and state.active and report.failed:
        state.failed(node_test_id(state, item), report)
    if state is not None and state.active and report.skipped and report.when in ("setup", "call"):
        test_id = node_test_id(state, item)
        if hasattr(report, "wasxfail"):  # failed as expected: what it measured before failing is not kept
            state.xfailed.add(test_id)
            state.left_out[test_id] = f"xfail: {report.wasxfail or 'expected to fail'}"
            return
        longrepr = report.longrepr
        why = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else "skipped"
        state.left_out[test_id] = f"skipped: {why.removeprefix('Skipped: ')}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    """A file skipped at collection (`pytest.skip(..., allow_module_level=True)`, `pytest.importorskip`) is left
    out on purpose too: its tests never reach `pytest_runtest_makereport`, and their baseline cases failed as
    `missing`."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    state = collector.config.stash.get(SESSION_KEY, None)
    if state is not None and state.active and report.skipped and isinstance(collector, pytest.Module):
        longrepr = report.longrepr
        why = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else "skipped"
        state.left_out[node_test_id(state, collector)] = f"skipped: {why.removeprefix('Skipped: ')}"


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(SESSION_KEY, None)
    if state is None or hasattr(session.config, "workerinput"):  # a pytest-xdist worker: nothing to write
        return
    code = state.finish()
    if code and session.exitstatus == 0:
        session.exitstatus = code


def _output_width(tr: Any) -> tuple[int, bool]:
    """(width, on a terminal): a terminal's own width, where tables take their compact layout and lines wrap at
    words; else (a CI log) LOG_WIDTH, each row and message on one line for grep, as `perfci compare` prints."""
    from perfci.reports.case_table import LOG_WIDTH

    tw = getattr(tr, "_tw", None)
    isatty = getattr(getattr(tw, "_file", None), "isatty", None)
    terminal = bool(isatty()) if callable(isatty) else False
    return (max(20, int(getattr(tw, "fullwidth", 80))) if terminal else LOG_WIDTH), terminal


def _lines(text: str, width: int, terminal: bool) -> str:
    """A message wrapped at spaces on a terminal (never inside a word or a path), whole in a log."""
    import textwrap

    if not terminal:
        return text
    return "\n".join(textwrap.fill(p, width, break_long_words=False, break_on_hyphens=False) for p in text.split("\n"))


def _table_text(table: Any, width: int) -> str:
    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None, force_terminal=False).print(table)
    return buf.getvalue()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(SESSION_KEY, None)
    if state is not None and state.disabled and state.out is not None:  # said, not silent (addopts may hold it)
        terminalreporter.write_sep("=", "perfci")
        terminalreporter.write_line(f"perfci: --perfci-disable: nothing measured, nothing written to {state.out}")
        return
    if state is None or (state.written is None and state.outcome is None and state.error is None):
        return
    from perfci.api.compare import unpaired_remedy, unsettled_note
    from perfci.reports.terminal import comparison_table, run_table, verdict_line

    tr = terminalreporter
    tr.write_sep("=", "perfci")
    width, terminal = _output_width(tr)
    if state.measured is not None:  # the table `perfci run` prints
        tr.write(_table_text(run_table(state.measured), width))
    if state.written is not None:
        tr.write_line(f"perfci results: {state.written} ({len(state.cases)} case(s))")
    if state.error is not None:
        tr.write_line(state.error, red=True)
    if state.outcome is not None:
        tr.write(_table_text(comparison_table(state.outcome.comparison), width))
        for w in state.outcome.comparison.warnings:  # as `perfci compare` says them (they were in the file only)
            tr.write_line(_lines(f"warning: {w}", width, terminal), yellow=True)
        failing = bool(state.outcome.comparison.failing)
        tr.write_line(_lines(verdict_line(state.outcome.comparison), width, terminal), red=failing, green=not failing)
        if text := unsettled_note(
            state.outcome.unsettled, unpaired_remedy(state.outcome.unsettled), state.outcome.comparison
        ):
            tr.write_line(_lines(text, width, terminal))
