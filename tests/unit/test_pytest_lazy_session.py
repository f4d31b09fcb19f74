"""A worker's pytest session over one file runs only the tests asked for, when asked, in the order asked
(workloads/pytest_capture.FileTests), and the context check of a kept callable (`check_context`), on fake clocks."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from perfci.workloads.api import LocatedFailure
from perfci.workloads.pytest_capture import (
    CONTEXT_BURST_CALLS,
    CONTEXT_BURSTS,
    Captured,
    Recorder,
    call_times,
    check_context,
)

TESTS = """
import os
import pytest

LOG = os.environ["LAZY_LOG"]


def say(word):
    with open(LOG, "a") as f:
        f.write(word + "\\n")


@pytest.fixture(scope="module")
def shared():
    say("module-up")
    yield 7
    say("module-down")


class TestGroup:
    @pytest.fixture(scope="class")
    def grouped(self):
        say("class-up")
        yield 1
        say("class-down")

    def test_in_class(self, benchmark, shared, grouped):
        say("run-in_class")
        benchmark(lambda: shared + grouped)


def test_first(benchmark, shared):
    say("run-first")
    benchmark(lambda: shared * 2)


def test_never_asked(benchmark):
    say("run-never_asked")
    benchmark(lambda: 0)


def test_last(benchmark, shared):
    say("run-last")
    benchmark(lambda: shared * 3)
"""

DRIVER = """
import sys
from pathlib import Path
from perfci.workloads.pytest_capture import FileTests

tests = FileTests(Path(sys.argv[1]))
for key in sys.argv[2:]:
    print(key, tests.callable_of(key).fn(), flush=True)
"""


def test_only_the_tests_asked_for_run_in_the_order_asked_with_their_scopes_set_up_once(tmp_path: Path) -> None:
    path = tmp_path / "test_lazy.py"
    path.write_text(TESTS)
    log = tmp_path / "log"
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(path), "test_last", "TestGroup::test_in_class", "test_first", "test_last"],
        capture_output=True, text=True, timeout=120, env={**_env(), "LAZY_LOG": str(log)}, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["test_last", "21", "TestGroup::test_in_class", "8", "test_first", "14",
                                   "test_last", "21"]  # fmt: skip
    # each test once (the second ask of test_last gave its kept callable), the class's scope ended before a test
    # outside it ran, the module's once at the worker's end; the test never asked for never ran
    assert log.read_text().split() == [
        "module-up", "run-last", "class-up", "run-in_class", "class-down", "run-first", "module-down",
    ]  # fmt: skip


def test_a_test_that_crashes_the_process_takes_only_itself(tmp_path: Path) -> None:
    """A test that kills its process (a segmentation fault) before the one asked for in file order does not run."""
    path = tmp_path / "test_crash.py"
    path.write_text(
        "import ctypes\n\n\ndef test_crash(benchmark):\n    ctypes.string_at(0)\n\n\n"
        "def test_fine(benchmark):\n    benchmark(lambda: 5)\n"
    )
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(path), "test_fine"], capture_output=True, text=True,
                          timeout=120, env=_env(), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0 and proc.stdout.split() == ["test_fine", "5"], proc.stderr
    crashed = subprocess.run([sys.executable, "-c", DRIVER, str(path), "test_crash"], capture_output=True, text=True,
                             timeout=120, env=_env(), cwd=tmp_path)  # fmt: skip
    assert crashed.returncode == -11 and 'test_crash.py", line 5 in test_crash' in crashed.stderr


TWO_FILES = """
import sys
from pathlib import Path
from perfci.workloads.pytest_capture import file_tests

for name, key in [("test_one.py", "test_a"), ("test_two.py", "test_a"), ("test_one.py", "test_b"),
                  ("test_two.py", "test_b")]:
    print(name, key, file_tests(Path(sys.argv[1]) / name).callable_of(key).fn(), flush=True)
"""


def test_two_files_sessions_wait_side_by_side_in_one_worker(tmp_path: Path) -> None:
    """A worker whose cases come from two files alternates between their two waiting sessions; each file's module
    fixture is set up once, and both end at the worker's exit."""
    for n, name in ((1, "one"), (2, "two")):
        (tmp_path / f"test_{name}.py").write_text(
            "import os\nimport pytest\n\n\n@pytest.fixture(scope='module')\ndef base():\n"
            f"    open(os.environ['LAZY_LOG'], 'a').write('{name}-up\\n')\n    yield {n}\n"
            f"    open(os.environ['LAZY_LOG'], 'a').write('{name}-down\\n')\n\n\n"
            "def test_a(benchmark, base):\n    benchmark(lambda: base * 10)\n\n\n"
            "def test_b(benchmark, base):\n    benchmark(lambda: base * 100)\n"
        )
    log = tmp_path / "log"
    proc = subprocess.run([sys.executable, "-c", TWO_FILES, str(tmp_path)], capture_output=True, text=True,
                          timeout=120, env={**_env(), "LAZY_LOG": str(log)}, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [line.split()[-1] for line in proc.stdout.splitlines()] == ["10", "20", "100", "200"]
    assert sorted(log.read_text().split()) == ["one-down", "one-up", "two-down", "two-up"]


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}


class FakeClock:
    """A clock that moves only when the timed function runs: its i-th call takes steps[i] (then 1 µs)."""

    def __init__(self, steps: list[float]) -> None:
        self.now, self.steps, self.calls = 0.0, list(steps), 0

    def __call__(self) -> float:
        return self.now

    def call(self) -> int:
        self.calls += 1
        self.now += self.steps.pop(0) if self.steps else 1e-6
        return 42


def _keep(steps: list[float]) -> Captured:
    recorder = Recorder()
    clock = FakeClock(steps)
    assert recorder.keep(Captured(clock.call, "benchmark"), clock=clock) == 42
    return recorder.calls[0]


def test_the_time_inside_the_test_is_the_fastest_repeated_call() -> None:
    kept = _keep([5e-6] + [3e-6, 2e-6, 4e-6] + [2.5e-6] * 50)
    assert kept.in_test_warm and kept.in_test_s == pytest.approx(2e-6)
    slow = _keep([0.5])  # a first call of 0.5 s is not repeated inside the test
    assert not slow.in_test_warm and slow.in_test_s == pytest.approx(0.5)


def _after(seconds: float, *later: float) -> Callable[[int], float]:
    """Bursts after the test: each call of the first takes `seconds`, of the next ones `later` (else `seconds`)."""
    bursts = (seconds, *later) + (later[-1] if later else seconds,) * CONTEXT_BURSTS
    clock = FakeClock([step for burst in bursts[:CONTEXT_BURSTS] for step in [burst] * CONTEXT_BURST_CALLS])
    return lambda calls: call_times(clock.call, calls, clock)


def test_a_call_three_times_slower_or_faster_after_the_test_is_an_error() -> None:
    kept = Captured(lambda: None, "benchmark", in_test_s=2e-6, in_test_warm=True)
    check_context(kept, _after(5.9e-6))  # 2.95x: the same code path, within the rule
    check_context(kept, _after(0.7e-6))  # a 2.9th
    with pytest.raises(LocatedFailure, match=r"took 2 µs inside the test and 6.1 µs after it \(3.05x\)"):
        check_context(kept, _after(6.1e-6))
    with pytest.raises(LocatedFailure, match=r"inside the test and 600 ns after it"):
        check_context(kept, _after(0.6e-6))
    check_context(Captured(lambda: None, "benchmark", in_test_s=0.5), _after(5.0))  # a slow first call: unchecked


def test_a_slow_burst_after_the_test_is_timed_again_before_it_is_called_another_code_path() -> None:
    kept = Captured(lambda: None, "benchmark", in_test_s=2e-6, in_test_warm=True)
    check_context(kept, _after(8.2e-6, 2.1e-6))  # a busy machine slowed the first burst (seen in CI): then 1.05x
    check_context(kept, _after(9e-6, 7e-6, 2.2e-6))  # two slow bursts, the third is the call's time
    with pytest.raises(LocatedFailure, match=r"\(3.5x\)"):  # slower in every burst: another code path
        check_context(kept, _after(8e-6, 7.5e-6, 7e-6))


def test_the_burst_stops_at_its_time_limit() -> None:
    clock = FakeClock([0.03] * CONTEXT_BURST_CALLS)
    assert call_times(clock.call, CONTEXT_BURST_CALLS, clock) == pytest.approx(0.03)
    assert clock.calls == 2  # two calls of 30 ms passed the 50 ms limit


MODES_TESTS = """
import torch


def step():
    return torch.is_grad_enabled(), torch.is_inference_mode_enabled()


def test_no_grad(benchmark):
    with torch.no_grad():
        benchmark(step)


def test_inference(benchmark):
    with torch.inference_mode():
        benchmark(step)


def test_plain(benchmark):
    benchmark(step)
"""

MODES_DRIVER = """
import sys
from perfci.workloads.api import WorkloadContext
from perfci.workloads.pytest_cases import pytest_workload, pytest_source
from pathlib import Path

source = pytest_source(Path(sys.argv[1]))
for key in ("test_no_grad", "test_inference", "test_plain"):
    ctx = WorkloadContext(device="cpu", params={}, seed=0)
    fn = pytest_workload(source, "test_modes.py::" + key).setup(ctx)
    print(key, *fn(), ctx.notes.get("pytest_torch_mode", "-"), flush=True)
"""


def test_a_call_the_test_made_under_no_grad_or_inference_mode_is_timed_under_it_again(tmp_path: Path) -> None:
    """The worker calls the kept callable after its test has left `torch.no_grad()` (or `inference_mode()`): the
    callable perfci times enters the test's mode again at every call, and the case's notes say which."""
    path = tmp_path / "test_modes.py"
    path.write_text(MODES_TESTS)
    proc = subprocess.run([sys.executable, "-c", MODES_DRIVER, str(path)], capture_output=True, text=True,
                          timeout=120, env=_env(), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "test_no_grad False False torch.no_grad()",
        "test_inference False True torch.inference_mode()",
        "test_plain True False -",
    ]


def test_modes_are_recorded_only_where_torch_was_imported_and_the_default_leaves_the_callable_as_it_is() -> None:
    import torch

    from perfci.workloads.torch_modes import DEFAULT_MODES, TorchModes, torch_modes, under_modes

    recorder = Recorder()

    def fn() -> bool:
        return torch.is_grad_enabled()

    with torch.no_grad():
        recorder.keep(Captured(fn, "benchmark"))
    recorder.keep(Captured(fn, "benchmark"))
    kept, plain = recorder.calls
    assert kept.modes == TorchModes(grad=False) and plain.modes == DEFAULT_MODES == torch_modes()
    assert under_modes(fn, plain.modes) is fn and under_modes(fn, None) is fn
    assert under_modes(fn, kept.modes)() is False and fn() is True and torch.is_grad_enabled()
