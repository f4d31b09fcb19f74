"""The pytest plugin (perfci/pytest_plugin) through pytester: the `perf` fixture writes a perfci results file
naming the test, `--perfci-compare` fails the session on an injected slowdown, and pytest-benchmark works
beside it. Each session runs in a subprocess, as pytest runs it (the plugin loaded from its entry point; an
in-process run would drop the numpy modules it imported, which cannot be loaded twice). Small budgets and a 100x
slowdown keep it fast and deterministic on a busy 2-core machine."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from perfci.format.schema import json_schema, load_results
from perfci.metrics.registry import LATENCY

pytestmark = [pytest.mark.integration, pytest.mark.serial]  # timing-sensitive: run alone (README)
pytest_plugins = ["pytester"]

FAST = ["-p", "no:cacheprovider", "--perfci-rounds", "3", "--perfci-round-time", "0.02"]
# Cross-session noise for the comparisons here: the 2-core VM these tests run on changed speed by up to 1.8x
# between seconds (2026-12-03: one unchanged 2 us function read 2.1 and 3.6-3.8 us in separate sessions, with no
# CPU contention to see; docs/pytest.md), far beyond the plugin's default of 5%. The injected slowdowns (100x)
# stay regressions at 35%.
JOB_NOISE = ["--perfci-job-noise", "0.35"]
TEST_FILE = """
import os
import time

EXTRA_S = float(os.environ.get("PERFCI_TEST_EXTRA_S", "0"))


def work():
    total = 0
    for i in range(50):
        total += i * i
    if EXTRA_S:  # the injected slowdown: a busy wait, so the time is spent whatever the scheduler does
        end = time.perf_counter() + EXTRA_S
        while time.perf_counter() < end:
            pass
    return total


def test_work(perf):
    case = perf(work)
    assert case is not None and case.rounds


def test_plain():
    assert True
"""


def _results(path: Path) -> dict[str, object]:
    doc = json.loads(path.read_text("utf-8"))
    jsonschema.validate(doc, json_schema())  # valid against the results schema ...
    load_results(path)  # ... and read back by perfci's own reader
    return doc


def test_perf_writes_results_naming_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_speed=TEST_FILE)
    result = pytester.runpytest_subprocess(*FAST, "--perfci-out", "out")
    result.assert_outcomes(passed=2)
    doc = _results(pytester.path / "out" / "results.json")
    cases = doc["cases"]
    assert isinstance(cases, list) and [c["id"] for c in cases] == ["test_speed.py::test_work@cpu"]
    assert len(cases[0]["rounds"]) == 3
    result.stdout.fnmatch_lines(["*perfci results: *results.json (1 case(s))*"])


def test_compare_fails_the_session_on_a_slowdown(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_speed=TEST_FILE)
    pytester.runpytest_subprocess(*FAST, "--perfci-out", "base").assert_outcomes(passed=2)
    base = pytester.path / "base" / "results.json"
    base_latency = next(m for m in load_results(base).cases[0].metrics if m.name == LATENCY).value

    # the same code again passes
    same = pytester.runpytest_subprocess(*FAST, *JOB_NOISE, "--perfci-compare", str(base), "--perfci-threshold", "0.5")
    same.assert_outcomes(passed=2)
    assert same.ret == 0

    # 100 times slower (at least 1 ms a call) regresses: exit 1 with every test passed, and the verdict table
    monkeypatch.setenv("PERFCI_TEST_EXTRA_S", str(max(1e-3, 100 * base_latency)))
    slow = pytester.runpytest_subprocess(*FAST, *JOB_NOISE, "--perfci-compare", str(base), "--perfci-out", "head")
    slow.assert_outcomes(passed=2)
    (row,) = json.loads((pytester.path / "head" / "comparison.json").read_text("utf-8"))["rows"]
    if row["verdict"] == "inconclusive":  # only when this machine was far busier for the candidate: it says so
        assert "busy CPU" in row["note"] and slow.ret == 0
    else:
        assert slow.ret == 1
        # an 80-column terminal wraps the case id (how far depends on the note's length): the table's row is
        # found by its metric and verdict, then the headline
        slow.stdout.fnmatch_lines(["*= perfci =*", "*latency.median*regression*", "FAIL: 1 regression*"])
    assert (pytester.path / "head" / "report.html").is_file()


def test_a_gate_that_cannot_settle_its_tests_names_the_ab_that_can(pytester: pytest.Pytester) -> None:
    """Two sessions differ by the in-process job noise (5%), as much as the threshold: the gate cannot settle the
    test, and its summary names the A/B of this test file that can."""
    pytester.makepyfile(test_speed=TEST_FILE)
    pytester.runpytest_subprocess(*FAST, "--perfci-out", "base").assert_outcomes(passed=2)
    same = pytester.runpytest_subprocess(*FAST, "--perfci-compare", str(pytester.path / "base" / "results.json"))
    same.assert_outcomes(passed=2)
    same.stdout.fnmatch_lines(["note: 1 case(s) not settled at the practical threshold*"])
    assert "`perfci ab BASE_REV --pytest test_speed.py`" in " ".join(same.stdout.lines)


def test_beside_pytest_benchmark(pytester: pytest.Pytester) -> None:
    """With pytest-benchmark installed: under --perfci-out perfci serves `benchmark` too (both tests are cases);
    without it, pytest-benchmark's own fixture measures and prints its table."""
    pytester.makepyfile(
        test_both="""
def work():
    return sum(range(100))

def test_with_benchmark(benchmark):
    assert benchmark(work) == 4950

def test_with_perf(perf):
    assert perf(work) is not None
"""
    )
    result = pytester.runpytest_subprocess(*FAST, "--perfci-out", "out")
    result.assert_outcomes(passed=2)
    doc = _results(pytester.path / "out" / "results.json")
    assert sorted(c["id"] for c in doc["cases"]) == [  # type: ignore[index]
        "test_both.py::test_with_benchmark@cpu",
        "test_both.py::test_with_perf@cpu",
    ]
    own = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark-max-time", "0.01")
    own.assert_outcomes(passed=2)
    own.stdout.fnmatch_lines(["*benchmark: 1 tests*", "*test_with_benchmark*"])


def test_disable_calls_once_and_writes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_speed=TEST_FILE.replace("case is not None and case.rounds", "case is None"))
    result = pytester.runpytest_subprocess(*FAST, "--perfci-out", "out", "--perfci-disable")
    result.assert_outcomes(passed=2)
    assert not (pytester.path / "out").exists()
    result.stdout.fnmatch_lines(["perfci: --perfci-disable: nothing measured, nothing written to *out"])
    # a gate switched off without a word (--perfci-disable in addopts, --perfci-compare in CI): refused
    pytester.makeini("[pytest]\naddopts = --perfci-disable\n")
    (pytester.path / "base.json").write_text("{}")
    gate = pytester.runpytest_subprocess(*FAST, "--perfci-compare", "base.json")
    assert gate.ret == pytest.ExitCode.USAGE_ERROR
    gate.stderr.fnmatch_lines(["*--perfci-compare with --perfci-disable: nothing is measured*-o addopts=*"])


def test_nothing_measured_is_said_and_fails_a_comparison(pytester: pytest.Pytester) -> None:
    """A `-k` that leaves no measuring test (or `--benchmark-skip`) with `--perfci-compare`: nothing compared is
    never a pass; it exited 0 and said nothing. With `--perfci-out` alone it is said, and the session passes."""
    pytester.makepyfile(test_speed=TEST_FILE)
    pytester.runpytest_subprocess(*FAST, "--perfci-out", "base").assert_outcomes(passed=2)
    base = pytester.path / "base" / "results.json"
    skipped = pytester.runpytest_subprocess(*FAST, "-k", "test_plain", "--perfci-compare", str(base))
    assert skipped.ret == 2, skipped.stdout.str()
    skipped.stdout.fnmatch_lines([f"perfci: no benchmark or perf test was measured (1 deselected), so nothing was "
                                  f"compared with {base}"])  # fmt: skip
    only = pytester.runpytest_subprocess(*FAST, "-k", "test_plain", "--perfci-out", "out")
    assert only.ret == 0 and not (pytester.path / "out" / "results.json").exists()
    only.stdout.fnmatch_lines(["perfci: no benchmark or perf test was measured (1 deselected): nothing written to *"])


def test_the_project_configuration_sets_the_rounds(pytester: pytest.Pytester) -> None:
    """`rounds = 3` in [tool.perfci] gives 3 in-process rounds (flag > environment > configuration > default)."""
    pytester.makepyfile(test_speed=TEST_FILE)
    pytester.makefile(".toml", pyproject='[project]\nname = "x"\n\n[tool.perfci]\nrounds = 3\n')
    quick = ["-p", "no:cacheprovider", "--perfci-round-time", "0.02"]
    pytester.runpytest_subprocess(*quick, "--perfci-out", "out").assert_outcomes(passed=2)
    assert len(load_results(pytester.path / "out" / "results.json").cases[0].rounds) == 3
    pytester.runpytest_subprocess(*quick, "--perfci-rounds", "2", "--perfci-out", "two").assert_outcomes(passed=2)
    assert len(load_results(pytester.path / "two" / "results.json").cases[0].rounds) == 2  # the flag wins


@pytest.mark.parametrize(
    ("args", "config", "message"),
    [
        (["--perfci-rounds", "1"], "", "ERROR: --perfci-rounds: must be an integer >= 2, not 1."),
        ([], "rounds = 1\n", "ERROR: *pyproject.toml:5: key tool.perfci.rounds: must be an integer >= 2, got 1."),
        (
            ["--perfci-fail-on", "faster"],
            "",
            "ERROR: --perfci-fail-on: must be one of regression, slower, not 'faster'.",
        ),
    ],
)
def test_the_same_bounds_as_perfci_run(pytester: pytest.Pytester, args: list[str], config: str, message: str) -> None:
    pytester.makepyfile(test_speed=TEST_FILE)
    pytester.makefile(".toml", pyproject=f'[project]\nname = "x"\n\n[tool.perfci]\n{config}')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, "--perfci-out", "out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert not (pytester.path / "out").exists()


def test_a_bad_configuration_does_not_stop_a_session_that_writes_and_compares_nothing(
    pytester: pytest.Pytester,
) -> None:
    """`rounds = 1` in [tool.perfci] stopped every plain `pytest` run of the project (exit 4), perf options or not:
    without --perfci-out/--perfci-compare it is a warning, and the tests run; a bad flag is still refused."""
    pytester.makepyfile(test_speed=TEST_FILE)
    pytester.makefile(".toml", pyproject='[project]\nname = "x"\n\n[tool.perfci]\nrounds = 1\n')
    plain = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--perfci-round-time", "0.02")
    plain.assert_outcomes(passed=2, warnings=1)
    plain.stdout.fnmatch_lines(["*perfci: *pyproject.toml:5: key tool.perfci.rounds: must be an integer >= 2, got 1*"])
    flag = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--perfci-rounds", "1")
    assert flag.ret == pytest.ExitCode.USAGE_ERROR


def test_a_test_that_fails_after_measuring_is_an_error_case(pytester: pytest.Pytester) -> None:
    """A test whose assertion fails after `benchmark(...)` or `perf(...)` measured: its cases are `error`s with
    pytest's message (they were `ok`, and such a file served as a clean baseline), their rounds kept."""
    pytester.makepyfile(
        test_fail="""
        def test_wrong(benchmark):
            benchmark(sum, range(100))
            assert False, "wrong result"

        def test_named(perf):
            perf(lambda: sum(range(10)), name="a")
            raise RuntimeError("after measuring")

        def test_right(perf):
            perf(lambda: sum(range(10)))
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--perfci-round-time", "0.02", "--perfci-out", "o")
    result.assert_outcomes(passed=1, failed=2)
    cases = {c.id: c for c in load_results(pytester.path / "o" / "results.json").cases}
    wrong, named = cases["test_fail.py::test_wrong@cpu"], cases["test_fail.py::test_named::a@cpu"]
    assert wrong.status.value == "error" and wrong.rounds
    assert wrong.errors[0].message == "the test failed (call): test_fail.py:3: AssertionError: wrong result"
    assert named.status.value == "error" and "RuntimeError: after measuring" in named.errors[0].message
    assert cases["test_fail.py::test_right@cpu"].status.value == "ok"


def test_an_expected_failure_is_left_out_not_recorded_ok(pytester: pytest.Pytester) -> None:
    """An `xfail` test that measures and then fails as expected was recorded `ok` and listed as "skipped: skipped"
    (a helper's audit): it is left out as `xfail: <reason>` and what it measured is not kept; a test that passes
    though marked xfail (not strict) keeps its measurement."""
    pytester.makepyfile(
        test_x="""
        import pytest

        @pytest.mark.xfail(reason="wrong until #12")
        def test_known_bad(benchmark):
            benchmark(sum, range(100))
            assert False

        @pytest.mark.xfail(reason="flaky")
        def test_passes_anyway(benchmark):
            benchmark(sum, range(10))

        def test_fine(benchmark):
            benchmark(sum, range(10))
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--perfci-round-time", "0.02", "--perfci-out", "o")
    result.assert_outcomes(passed=1, xfailed=1, xpassed=1)
    run = load_results(pytester.path / "o" / "results.json")
    assert sorted(c.id for c in run.cases) == ["test_x.py::test_fine@cpu", "test_x.py::test_passes_anyway@cpu"]
    assert run.settings["left_out"] == {"test_x.py::test_known_bad": "xfail: wrong until #12"}


def test_a_session_that_dies_leaves_what_it_measured_written_part_way(pytester: pytest.Pytester) -> None:
    """A test that crashed the process (a segmentation fault) after another test was measured left no results file
    (a helper's audit): the first measured case is written part-way (`settings.complete` false), which `perfci
    compare` refuses and `perfci run --resume` is named for."""
    pytester.makepyfile(
        test_die="""
        import ctypes

        def test_a(benchmark):
            benchmark(sum, range(100))

        def test_z_crash(benchmark):
            ctypes.string_at(0)
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--perfci-round-time", "0.02", "--perfci-out", "o")
    assert result.ret not in (0, 1)  # killed by the signal
    run = load_results(pytester.path / "o" / "results.json")
    assert run.settings["complete"] is False and [c.id for c in run.cases] == ["test_die.py::test_a@cpu"]
    done = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--perfci-round-time", "0.02", "--perfci-out", "p",
                                         "-k", "test_a")  # fmt: skip
    assert done.ret == 0 and load_results(pytester.path / "p" / "results.json").settings["complete"] is True
    # a session that dies before its first measured test does not leave an earlier session's file standing as its
    # own (a helper's audit: the old, complete file stayed)
    pytester.makepyfile(test_early="import os\n\ndef test_0(benchmark):\n    os._exit(1)\n")
    early = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--perfci-out", "p", "test_early.py")
    assert early.ret == 1 and not (pytester.path / "p" / "results.json").exists()


def test_perfci_budget_is_a_deprecated_name_of_round_time(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_speed=TEST_FILE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--perfci-budget", "0.02", "--perfci-out", "out")
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(["*--perfci-budget is deprecated*use --perfci-round-time*"])
    assert load_results(pytester.path / "out" / "results.json").settings["budget_s"] == 0.02
