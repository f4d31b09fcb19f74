"""pytest-benchmark's `benchmark` fixture served by perfci (perfci/pytest_plugin/benchmark_fixture.py), with
pytest-benchmark installed: a suite written for it runs unchanged under --perfci-out, every test becomes a case,
and pytest-benchmark's own hooks do not break the session. Sessions run in subprocesses, as pytest runs them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["pytester"]
pytestmark = [pytest.mark.integration, pytest.mark.serial]  # timing-sensitive: run alone (README)

FAST = ["-p", "no:cacheprovider", "--perfci-rounds", "3", "--perfci-round-time", "0.02"]
JOB_NOISE = ["--perfci-job-noise", "0.35"]  # the VM's speed between sessions: tests/integration/test_pytest_plugin.py

SUITE = """
import os
import time

import pytest

EXTRA_S = float(os.environ.get("PERFCI_TEST_EXTRA_S", "0"))


def work(n=200):
    total = sum(i * i for i in range(n))
    if EXTRA_S and n == 300:  # the injected slowdown, in one parametrized test only: a busy wait
        end = time.perf_counter() + EXTRA_S
        while time.perf_counter() < end:
            pass
    return total


def test_plain(benchmark):
    assert benchmark(work, 100) == sum(i * i for i in range(100))


@pytest.mark.parametrize("n", [100, 300])
def test_param(benchmark, n):
    benchmark.extra_info["n"] = n
    assert benchmark(work, n=n) == work(n)


@pytest.mark.benchmark(group="sorting")
def test_pedantic(benchmark):
    calls = []
    def setup():
        calls.append(1)
        return (list(range(500, 0, -1)),), {}
    result = benchmark.pedantic(sorted, setup=setup, rounds=7, warmup_rounds=2)
    assert result == list(range(1, 501))
    assert len(calls) == 9  # warm-up rounds and timed rounds each get their own setup


def test_fixed_iterations(benchmark):
    benchmark.group = "fixed"
    assert benchmark.pedantic(work, args=(50,), rounds=6, iterations=4) == work(50)
"""


def _cases(path: Path) -> dict[str, dict[str, Any]]:
    doc = json.loads(path.read_text("utf-8"))
    return {c["id"]: c for c in doc["cases"]}


def test_a_pytest_benchmark_suite_becomes_perfci_cases(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess(*FAST, "--perfci-out", "out")
    result.assert_outcomes(passed=5)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    cases = _cases(pytester.path / "out" / "results.json")
    assert sorted(cases) == [
        "test_suite.py::test_fixed_iterations@cpu",
        "test_suite.py::test_param[100]@cpu",
        "test_suite.py::test_param[300]@cpu",
        "test_suite.py::test_pedantic@cpu",
        "test_suite.py::test_plain@cpu",
    ]
    assert all(c["status"] == "ok" and len(c["rounds"]) >= 2 for c in cases.values())
    assert cases["test_suite.py::test_param[300]@cpu"]["rounds"][0]["telemetry"]["extra_info"] == {"n": 300}
    assert cases["test_suite.py::test_pedantic@cpu"]["tags"] == ["group:sorting"]
    assert cases["test_suite.py::test_fixed_iterations@cpu"]["tags"] == ["group:fixed"]  # set in the test
    # pedantic's explicit request is honoured and recorded: 7 samples of one call (setup), 6 samples of 4 calls
    ped = cases["test_suite.py::test_pedantic@cpu"]["rounds"]
    assert sum(len(r["samples"]) for r in ped) == 7 and {r["iterations"] for r in ped} == {1}
    assert ped[0]["telemetry"]["fixed"] == {"rounds": 7, "iterations": None, "warmup_rounds": 2, "setup": True}
    fixed = cases["test_suite.py::test_fixed_iterations@cpu"]["rounds"]
    assert sum(len(r["samples"]) for r in fixed) == 6 and {r["iterations"] for r in fixed} == {4}
    # left open, iterations are calibrated and rounds are perfci's
    assert len(cases["test_suite.py::test_plain@cpu"]["rounds"]) == 3
    # the table `perfci run` prints (an 80-column table may wrap the case id)
    result.stdout.fnmatch_lines(["*= perfci =*", "*case*median*", "*test_suite.py*"])


def test_a_slower_test_fails_the_comparison_naming_only_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    pytester.runpytest_subprocess(*FAST, "--perfci-out", "base").assert_outcomes(passed=5)
    base = pytester.path / "base" / "results.json"
    per_call = _cases(base)["test_suite.py::test_param[300]@cpu"]["metrics"][0]["value"]
    monkeypatch.setenv("PERFCI_TEST_EXTRA_S", str(max(1e-3, 100 * per_call)))  # far beyond any noise
    slow = pytester.runpytest_subprocess(*FAST, *JOB_NOISE, "--perfci-compare", str(base), "--perfci-out", "head")
    slow.assert_outcomes(passed=5)
    rows = json.loads((pytester.path / "head" / "comparison.json").read_text("utf-8"))["rows"]
    # no other test is blamed, also when both sessions ran on a busy machine (a CI job beside other jobs: seen
    # +79% on an unchanged test, compare/contended.py); the slowed one is a regression (exit 1), or, on a machine
    # far busier while the candidate ran than while the baseline did, inconclusive, saying so
    assert {r["case_id"] for r in rows if r["verdict"] == "regression"} <= {"test_suite.py::test_param[300]@cpu"}
    (slowed,) = [r for r in rows if r["case_id"] == "test_suite.py::test_param[300]@cpu"]
    if slowed["verdict"] == "regression":
        assert slow.ret == 1
    else:
        assert slowed["verdict"] == "inconclusive" and "busy CPU" in slowed["note"] and slow.ret == 0


def test_without_perfci_out_pytest_benchmark_measures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark-max-time", "0.01")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["*benchmark 'sorting': 1 tests*"])
    assert "= perfci =" not in result.stdout.str()


def test_misuse_fails_the_test_not_the_session(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_misuse="""
def test_twice(benchmark):
    benchmark(sum, [1, 2])
    benchmark(sum, [1, 2])

def test_bad_rounds(benchmark):
    benchmark.pedantic(sum, args=([1],), rounds=0)

def test_setup_and_iterations(benchmark):
    benchmark.pedantic(sum, setup=lambda: (([1],), {}), iterations=3)

def test_raises(benchmark):
    benchmark(lambda: 1 / 0)

def test_fine(benchmark):
    assert benchmark(sum, [1, 2]) == 3
"""
    )
    result = pytester.runpytest_subprocess(*FAST, "--perfci-out", "out")
    result.assert_outcomes(passed=1, failed=4)
    result.stdout.fnmatch_lines(
        [
            "*used once per test*",
            "*rounds must be a whole number of at least 1*",
            "*iterations above 1 cannot be used with a setup*",
            "*ZeroDivisionError*",
        ],
        consecutive=False,
    )
    assert "INTERNALERROR" not in result.stdout.str()
    cases = _cases(pytester.path / "out" / "results.json")
    assert sorted(cases) == ["test_misuse.py::test_fine@cpu", "test_misuse.py::test_twice@cpu"]


def test_disable_calls_each_function_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_once="""
calls = []

def test_counted(benchmark):
    assert benchmark(lambda: calls.append(1) or len(calls)) == 1
    assert benchmark.disabled
"""
    )
    result = pytester.runpytest_subprocess(*FAST, "--perfci-out", "out", "--perfci-disable")
    result.assert_outcomes(passed=1)


def test_served_without_pytest_benchmark_loaded(pytester: pytest.Pytester) -> None:
    """With pytest-benchmark's plugin off, the suite still runs under --perfci-out, its marker known."""
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess(*FAST, "-p", "no:benchmark", "--strict-markers", "--perfci-out", "out")
    result.assert_outcomes(passed=5)
    assert len(_cases(pytester.path / "out" / "results.json")) == 5


def test_a_single_round_pedantic_test_is_said_in_the_session_summary(pytester: pytest.Pytester) -> None:
    """`benchmark.pedantic(rounds=1)` can never fail the gate (one round: no noise estimate); the comparison's
    warnings were written to comparison.json only, never to the session's summary."""
    pytester.makepyfile(
        test_once="N = 2000\n\ndef test_ped(benchmark):\n    benchmark.pedantic(sum, args=(range(N),), rounds=1)\n"
    )
    pytester.runpytest_subprocess(*FAST, "--perfci-out", "base").assert_outcomes(passed=1)
    (pytester.path / "test_once.py").write_text((pytester.path / "test_once.py").read_text().replace("2000", "20000"))
    result = pytester.runpytest_subprocess(*FAST, "--perfci-compare", "base/results.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["warning: 1 case(s) have a single round on a side, so no change in them can be decided (e.g. "
         "'test_once.py::test_ped@cpu'); measure 2 rounds or more*"]
    )  # fmt: skip
