"""`perfci ab --pytest` for real: a temp git repo with two commits of a pytest-benchmark file, the tests collected on
each side, run once in worker processes and their callables timed in lockstep pairs; and `ab` with nothing named
(the project's conventional folders, or exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.git_repos import commit, git, new_repo

pytestmark = pytest.mark.integration
SERIAL = pytest.mark.serial  # on the tests that assert verdicts of real measurements: run alone (README)

BENCH = """
import pytest


def work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def test_same(benchmark):
    assert benchmark(work, 3000) == work(3000)


def test_changed(benchmark):
    benchmark(work, {changed})


@pytest.mark.parametrize("n", [2000])
def test_pedantic(benchmark, n):
    benchmark.pedantic(work, args=(n,), rounds=3)


def test_measured_by_perf(perf):
    {perf_body}


def test_not_a_benchmark():
    assert True
"""
FAST = ("--pairs", "4", "--looks", "1", "--round-time", "0.05")
WORKLOAD = """
import perfci


@perfci.workload(timing={{"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.03, "min_sample_s": 0.0005}})
def loop(ctx):
    def f():
        s = 0
        for i in range({k}):
            s += i
        return s

    return f
"""


def perfci(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfci", *args], cwd=repo, capture_output=True, text=True, timeout=300
    )


def latency_rows(out: Path) -> dict[str, dict[str, object]]:
    doc = json.loads((out / "comparison.json").read_text())
    return {r["case_id"]: r for r in doc["rows"] if r["metric"] in ("latency.median", "error")}


@SERIAL
def test_pytest_benchmarks_in_lockstep_pairs_a_failing_test_is_its_own_error(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "proj")
    other = "def test_other(benchmark):\n    benchmark(sorted, [3, 1, 2])\n"
    base = BENCH.format(changed=3000, perf_body="perf(lambda: sum(range(2000)))")
    commit(repo, {"bench/test_b.py": base, "bench/test_other.py": other}, "v1")
    # the head: one test 3x slower, the perf test broken (it raises before measuring), a file that does not import
    head = BENCH.format(changed=9000, perf_body='raise RuntimeError("broken at head")')
    commit(repo, {"bench/test_b.py": head, "bench/test_other.py": "import no_such_module\n" + other}, "v2")
    out = tmp_path / "out"
    proc = perfci(repo, "ab", "HEAD~1", "HEAD", "--pytest", "bench", *FAST, "--out", str(out))
    assert proc.returncode in (1, 3), proc.stdout + proc.stderr  # a regression, and an error (exit 3 outranks 1)
    rows = latency_rows(out)
    ids = "bench/test_b.py::test_{}@cpu"
    changed, same = rows[ids.format("changed")], rows[ids.format("same")]
    assert changed["verdict"] == "regression" and 2.0 < changed["ratio"] < 4.5, changed
    assert changed["method"] == "paired" and changed["n_baseline"] == 4
    # measured and compared; its verdict is not asserted: 4 pairs at 0.05 s of a file that differs at head (the
    # other tests changed) put it anywhere from -4% to +22% on the CI machine (0e6851a), and the A/A tests hold the
    # no-false-alarm line; far from the changed test's 3x
    assert same["verdict"] != "error" and 0.7 < same["ratio"] < 1.45, same
    assert rows[ids.format("pedantic[2000]")]["ratio"] is not None  # benchmark.pedantic's target timed too
    broken = rows[ids.format("measured_by_perf")]
    assert broken["verdict"] == "error" and "broken at head" in broken["note"], broken
    assert "(at pytest_capture.py" not in broken["note"]  # where the test failed, not where perfci noticed it
    base_cases = {c["id"]: c for c in json.loads((out / "base" / "results.json").read_text())["cases"]}
    healthy = base_cases[ids.format("measured_by_perf")]  # sampled alone: its partner failed in set-up
    assert healthy["status"] == "ok" and len(healthy["rounds"]) == 4, healthy.get("errors")
    assert ids.format("not_a_benchmark") not in rows  # no benchmark or perf fixture: not a case
    unimportable = rows["bench/test_other.py::test_other@cpu"]  # its test read from the file's text
    assert unimportable["verdict"] == "error" and "no_such_module" in unimportable["note"], unimportable
    assert len(git(repo, "worktree", "list").splitlines()) == 1  # temporary worktrees removed
    # a test's own memory is its own: not pytest's session start and the file's fixtures, which went to whichever
    # test came first in its worker (14 MB in one round, 0 in the next)
    for side in ("base", "head"):
        doc = json.loads((out / side / "results.json").read_text())
        own = {c["id"]: [r["telemetry"]["memory_host_bytes"] for r in c["rounds"]] for c in doc["cases"] if c["rounds"]}
        assert own and max(max(v) for v in own.values()) < 4 * 2**20, (side, own)


def test_a_file_broken_at_head_keeps_its_ids_and_a_new_failing_test_says_why(tmp_path: Path) -> None:
    """A file with a syntax error at head: its cases are the base's (a parametrised test's ids included), each an
    `error` with pytest's message, and measured at base; a new test that fails is an `error` with its message; a
    --pytest file that exists only at head is measured though the working tree is at base."""
    repo = new_repo(tmp_path / "proj")
    bench = BENCH.format(changed=3000, perf_body="perf(lambda: sum(range(2000)))")
    commit(repo, {"bench/test_b.py": bench}, "v1")
    new_file = (
        "def test_boom(benchmark):\n    raise RuntimeError('new and broken')\n\n\n"
        "def test_fine(benchmark):\n    benchmark(sorted, [3, 1, 2])\n"
    )
    commit(repo, {"bench/test_b.py": bench + "\n\ndef broken(:\n", "bench/test_new.py": new_file}, "v2")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "HEAD~1")  # the working tree has no bench/test_new.py
    out = tmp_path / "out"
    proc = perfci(repo, "ab", "HEAD", head, "--pytest", "bench/test_b.py", "--pytest", "bench/test_new.py", *FAST,
                  "--out", str(out))  # fmt: skip
    assert proc.returncode == 3, proc.stdout + proc.stderr
    rows = latency_rows(out)
    ids = "bench/test_b.py::test_{}@cpu"
    for name in ("same", "changed", "pedantic[2000]", "measured_by_perf"):
        row = rows[ids.format(name)]
        assert row["verdict"] == "error" and "SyntaxError" in row["note"], row
    assert ids.format("pedantic") not in rows  # not the id read from the broken file's text
    assert not [r for r in rows.values() if r["verdict"] == "missing"]
    boom, fine = rows["bench/test_new.py::test_boom@cpu"], rows["bench/test_new.py::test_fine@cpu"]
    assert boom["verdict"] == "error" and "new and broken" in boom["note"], boom
    assert fine["verdict"] == "new", fine
    base_cases = json.loads((out / "base" / "results.json").read_text())["cases"]
    assert {c["status"] for c in base_cases} == {"ok"} and len(base_cases) == 4


def test_a_side_with_no_cases_stops_before_measuring(tmp_path: Path) -> None:
    """The workload folder deleted at head: said at once (exit 2), naming the side; the base's pairs were measured
    first and then compared with nothing."""
    repo = new_repo(tmp_path / "proj")
    commit(repo, {"perf/wl.py": WORKLOAD.format(k=3000), "README.md": "x\n"}, "v1")
    git(repo, "rm", "-rq", "perf")
    git(repo, "commit", "-qm", "v2: perf/ removed")
    out = tmp_path / "out"
    proc = perfci(repo, "ab", "HEAD~1", "HEAD", "--path", "perf", *FAST, "--out", str(out))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "nothing to compare: HEAD (" in proc.stderr and "has none of the 1 case(s)" in proc.stderr
    assert not (out / "base" / "results.json").exists()  # nothing measured


def test_paths_with_no_case_on_either_side_are_named_with_what_counts(tmp_path: Path) -> None:
    """A folder of plain pytest tests given to --pytest said only "no cases to compare on either revision": the
    paths are named with what would count as a case; a -k that leaves none says so instead."""
    repo = new_repo(tmp_path / "proj")
    commit(repo, {"perf/wl.py": WORKLOAD.format(k=3000), "plain/test_p.py": "def test_x():\n    assert 1\n"}, "v1")
    plain = perfci(repo, "ab", "HEAD", "HEAD", "--pytest", "plain", *FAST, "--out", str(tmp_path / "o1"))
    assert plain.returncode == 2, plain.stdout + plain.stderr
    said = " ".join(plain.stderr.split())
    assert "no perfci workload and no pytest test that uses the `benchmark` or `perf` fixture in plain." in said
    assert "`pytest --collect-only -q PATH`" in said
    none = perfci(repo, "ab", "HEAD", "HEAD", "--path", "perf", "-k", "zzz", *FAST, "--out", str(tmp_path / "o2"))
    assert none.returncode == 2 and "-k or --shard left none of the 1 found." in none.stderr, none.stderr


def test_a_pytest_file_skipped_whole_at_head_is_named_as_a_possible_cause(tmp_path: Path) -> None:
    """The only benchmark file skips itself at collection at head: nothing to compare (exit 2), and the message says
    that pytest may skip the files there, with the command that shows why; nothing measured."""
    repo = new_repo(tmp_path / "proj")
    bench = "def test_sorted(benchmark):\n    benchmark(sorted, [3, 1, 2])\n"
    commit(repo, {"bench/test_b.py": bench, "README.md": "x\n"}, "v1")
    skip = "import pytest\n\npytest.skip('not on this platform', allow_module_level=True)\n\n"
    commit(repo, {"bench/test_b.py": skip + bench}, "v2: skipped")
    out = tmp_path / "out"
    proc = perfci(repo, "ab", "HEAD~1", "HEAD", "--pytest", "bench", *FAST, "--out", str(out))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "has none of the 1 case(s)" in proc.stderr
    assert "or pytest skips their files there at collection" in proc.stderr
    assert "pytest --collect-only -rs PATH" in proc.stderr
    assert not (out / "base" / "results.json").exists()


CONTEXT_TESTS = """
import ctypes

import mylib


def test_fast_path(benchmark, monkeypatch):
    monkeypatch.setattr(mylib, "FAST", True)
    benchmark(mylib.compute)


def test_crash(benchmark):
    ctypes.string_at(0)
    benchmark(sorted, [3, 1, 2])


def test_sort(benchmark):
    benchmark(sorted, list(range({n}, 0, -1)))
"""
MYLIB = "FAST = False\n\n\ndef compute():\n    return sum(range(10)) if FAST else sum(range(3000))\n"


@SERIAL
def test_a_call_the_test_context_changes_and_a_crashing_test_are_their_own_errors(tmp_path: Path) -> None:
    """The helper's audit: a test that monkeypatches a fast path in was timed, after its fixtures were torn down,
    on the slow path (an A/A-like `unchanged`), and a test that crashed the worker took its file's other tests
    with it (every case `error`, a 3x slowdown unseen). Now the first is an `error` naming the times inside and
    after the test, the crash is its own case's error at its line, and the slowdown is a regression."""
    repo = new_repo(tmp_path / "proj")
    commit(repo, {"mylib.py": MYLIB, "bench/test_c.py": CONTEXT_TESTS.format(n=200), "pyproject.toml": ""}, "v1")
    commit(repo, {"bench/test_c.py": CONTEXT_TESTS.format(n=600)}, "v2: test_sort sorts 3x more")
    out = tmp_path / "out"
    # a second look where the first 4 pairs leave the 2 µs case undecided (one pair slowed by the machine's load)
    proc = perfci(repo, "ab", "HEAD~1", "HEAD", "--pytest", "bench", *FAST, "--looks", "2", "--out", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr  # a regression's exit code before the errors'
    rows = latency_rows(out)
    assert rows["bench/test_c.py::test_sort@cpu"]["verdict"] == "regression"
    fast = rows["bench/test_c.py::test_fast_path@cpu"]
    assert fast["verdict"] == "error" and "inside the test and" in fast["note"], fast
    crash = rows["bench/test_c.py::test_crash@cpu"]
    assert crash["verdict"] == "error" and "Segmentation fault; at test_c.py:13 in test_crash" in crash["note"], crash


GATED_CONFTEST = """
import pytest


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true")


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--run-slow"):
        for item in items:
            if "slow" in item.keywords:
                item.add_marker(pytest.mark.skip(reason="need --run-slow"))
"""
GATED_TESTS = """
import pytest


@pytest.mark.slow
def test_loop(benchmark):
    benchmark(sorted, list(range({n}, 0, -1)))


def test_steady(benchmark):
    benchmark(sorted, list(range(3000)))
"""
GATED_PYPROJECT = """
[tool.pytest.ini_options]
addopts = "--run-slow -n auto --lf -p no:randomly"
markers = ["slow"]
"""


@SERIAL
def test_the_projects_addopts_are_kept_less_what_would_change_the_run(tmp_path: Path) -> None:
    """A helper's audit: `ab --pytest` dropped the project's `addopts`, so a test that its conftest skips unless
    `--run-slow` (given in addopts) was skipped on both sides, and its 3x slowdown passed as `missing` on purpose.
    The addopts are kept now; pytest-xdist's `-n auto` and the cache's `--lf` among them are dropped (neither is
    installed or loaded in these sessions: kept, they stopped every session)."""
    repo = new_repo(tmp_path / "proj")
    files = {"pyproject.toml": GATED_PYPROJECT, "conftest.py": GATED_CONFTEST, "bench/test_g.py": GATED_TESTS}
    # calls of tens of µs: a 2.4 µs one (n=200) read 3.5x slower after its test on the busy CI machine (0e6851a)
    commit(repo, {**files, "bench/test_g.py": GATED_TESTS.format(n=3000)}, "v1")
    commit(repo, {"bench/test_g.py": GATED_TESTS.format(n=9000)}, "v2: test_loop sorts 3x more")
    out = tmp_path / "out"
    proc = perfci(repo, "ab", "HEAD~1", "HEAD", "--pytest", "bench", *FAST, "--out", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = latency_rows(out)
    assert rows["bench/test_g.py::test_loop@cpu"]["verdict"] == "regression", rows
    assert rows["bench/test_g.py::test_steady@cpu"]["verdict"] != "error", rows


STDIN_TESTS = """
import sys


def test_stdin(benchmark):
    data = sys.stdin.readline()
    benchmark(lambda: len(data))


def test_plain(benchmark):
    benchmark(sorted, [3, 1, 2])
"""
SESSION_CONFTEST = """
import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def session_log():
    yield
    with open(os.environ["PERFCI_TEST_LOG"], "a") as f:
        f.write("session-down\\n")
"""


@SERIAL
def test_a_test_reading_stdin_a_conftest_in_the_folder_and_session_teardown(tmp_path: Path) -> None:
    """A helper's audit: a test's `sys.stdin.readline()` read the worker's protocol pipe and hung its worker until
    the time-out (then the gate passed); a `conftest.py` inside the folder given stopped the listing ("exit code
    3"); session fixtures were never torn down in workers (they end with os._exit); pytest-benchmark made an empty
    `.benchmarks/` in the checkout. Now stdin reads nothing on both sides, the folder lists, every worker's
    session ends with its teardown, and the checkout gets no `.benchmarks/`."""
    repo = new_repo(tmp_path / "proj")
    files = {"bench/test_in.py": STDIN_TESTS, "bench/conftest.py": SESSION_CONFTEST, "pyproject.toml": ""}
    commit(repo, files, "v1")
    commit(repo, {"bench/test_in.py": STDIN_TESTS + "# a comment\n"}, "v2: a comment")
    log = tmp_path / "log"
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "perfci", "ab", "HEAD~1", "HEAD", "--pytest", "bench", *FAST, "--out", str(out)],
        cwd=repo, capture_output=True, text=True, timeout=300, env={**os.environ, "PERFCI_TEST_LOG": str(log)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = latency_rows(out)
    assert rows["bench/test_in.py::test_stdin@cpu"]["verdict"] not in ("error", "new", "missing"), rows
    assert log.read_text().count("session-down") >= 2  # each worker's session ended, its fixtures torn down
    assert not (repo / ".benchmarks").exists()


def test_a_malformed_expected_changes_file_stops_the_ab_before_measuring(tmp_path: Path) -> None:
    """It was found after the whole A/B had been measured (minutes of a CI job), and nothing was written."""
    repo = new_repo(tmp_path / "proj")
    commit(repo, {"perf/wl.py": WORKLOAD.format(k=3000)}, "v1")
    commit(repo, {"perf/wl.py": WORKLOAD.format(k=6000)}, "v2")
    (repo / "perfci-expected.toml").write_text('version = 1\n[[change]]\ncase = "wl.*"\nmetric = "latncy"\n'
                                               'max_change = "50%"\nreason = "x"\n')  # fmt: skip
    out = tmp_path / "out"
    proc = perfci(repo, "ab", "HEAD~1", "HEAD", "--path", "perf", *FAST, "--out", str(out))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "metric 'latncy' is unknown" in proc.stderr and "did you mean 'latency'?" in proc.stderr
    assert not (out / "base" / "results.json").exists()


@SERIAL
def test_nothing_named_measures_the_conventional_folders_or_stops(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "proj")
    commit(repo, {"perf/wl.py": WORKLOAD.format(k=3000), "perf/helpers.py": "X = 1\n", "README.md": "x\n"}, "v1")
    commit(repo, {"perf/wl.py": WORKLOAD.format(k=9000)}, "v2")
    out = tmp_path / "out"
    proc = perfci(repo, "ab", "HEAD~1", "HEAD", *FAST, "--out", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "perf/ (1 workload file)" in proc.stderr  # helpers.py defines no workload: left alone
    assert latency_rows(out)["wl.loop@cpu"]["verdict"] == "regression"

    empty = new_repo(tmp_path / "empty")
    commit(empty, {"src/app.py": "X = 1\n"}, "v1")
    commit(empty, {"src/app.py": "X = 2\n"}, "v2")
    proc = perfci(empty, "ab", "HEAD~1", "HEAD", *FAST, "--out", str(tmp_path / "out2"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "nothing to measure" in proc.stderr and "--suite default" in proc.stderr
    assert "set `paths` or `pytest` in [tool.perfci]" in proc.stderr  # the hint is text, not rich markup
    assert "Traceback" not in proc.stderr


@SERIAL
def test_configured_pytest_paths_and_a_missing_one(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "proj")
    config = '[tool.perfci]\npytest = ["bench"]\n'
    bench = BENCH.format(changed=3000, perf_body="perf(lambda: sum(range(2000)))")
    commit(repo, {"pyproject.toml": config, "bench/test_b.py": bench}, "v1")
    proc = perfci(repo, "ab", "HEAD", "-k", "test_same", *FAST, "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(latency_rows(tmp_path / "out")) == {"bench/test_b.py::test_same@cpu"}
    proc = perfci(repo, "ab", "HEAD", "--pytest", "no_such_folder", *FAST)
    assert proc.returncode == 2 and "--pytest no_such_folder: no such file or folder" in proc.stderr


def test_benchmark_json_with_perfci_out_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "test_b.py").write_text(BENCH.format(changed=3000, perf_body="perf(lambda: 1)"))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "test_b.py", "-p", "no:cacheprovider", "--perfci-out", str(tmp_path / "o"),
         "--benchmark-json", str(tmp_path / "b.json")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 4, proc.stdout + proc.stderr  # pytest's usage error
    assert "--benchmark-json cannot be used with --perfci-out/--perfci-compare" in proc.stderr
    assert not (tmp_path / "o" / "results.json").exists()


@SERIAL
def test_ci_on_a_pull_request_measures_the_projects_pytest_benchmarks(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "proj")
    body = "perf(lambda: sum(range(2000)))"
    commit(repo, {"benchmarks/test_b.py": BENCH.format(changed=3000, perf_body=body)}, "v1")
    commit(repo, {"benchmarks/test_b.py": BENCH.format(changed=9000, perf_body=body)}, "v2")
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    proc = subprocess.run(
        [sys.executable, "-m", "perfci", "ci", "--base", "HEAD~1", *FAST, "--out", str(out), "-k", "test_changed"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "benchmarks/ (1 pytest benchmark file)" in proc.stderr
    rows = latency_rows(out)
    assert set(rows) == {"benchmarks/test_b.py::test_changed@cpu"}
    assert rows["benchmarks/test_b.py::test_changed@cpu"]["verdict"] == "regression"


@SERIAL
def test_ci_on_a_push_runs_what_the_pull_requests_compare_or_stops(tmp_path: Path) -> None:
    """A push (`--mode baseline`) with nothing named measures the project's conventional folders, workloads and
    pytest benchmarks alike, as a pull request's A/B does; not the built-in suite in silence."""
    repo = new_repo(tmp_path / "proj")
    body = "perf(lambda: sum(range(2000)))"
    commit(repo, {"perf/wl.py": WORKLOAD.format(k=3000),
                  "benchmarks/test_b.py": BENCH.format(changed=3000, perf_body=body)}, "v1")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_") and k != "PERFCI_DB"}

    def ci(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "perfci", "ci", "--mode", "baseline", "--rounds", "2", "--round-time", "0.05"]
        return subprocess.run([*cmd, *args], cwd=where, env=env, capture_output=True, text=True, timeout=300)

    proc = ci(repo, "--out", str(tmp_path / "out"), "-k", "loop", "-k", "test_same")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "perf/ (1 workload file), benchmarks/ (1 pytest benchmark file)" in proc.stderr
    cases = {c["id"] for c in json.loads((tmp_path / "out" / "results.json").read_text())["cases"]}
    assert cases == {"wl.loop@cpu", "benchmarks/test_b.py::test_same@cpu"}

    proc = ci(repo, "--out", str(tmp_path / "out2"), "--pytest", "benchmarks", "-k", "test_same")  # named: only it
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = {c["id"] for c in json.loads((tmp_path / "out2" / "results.json").read_text())["cases"]}
    assert cases == {"benchmarks/test_b.py::test_same@cpu"}

    empty = new_repo(tmp_path / "empty")
    commit(empty, {"src/app.py": "X = 1\n"}, "v1")
    proc = ci(empty, "--out", str(tmp_path / "out3"))
    assert proc.returncode == 2 and "nothing to measure" in proc.stderr, proc.stdout + proc.stderr
    assert "--suite default" in proc.stderr and not (tmp_path / "out3").exists()
    proc = ci(empty, "--out", str(tmp_path / "out4"), "--suite", "default", "-k", "softmax")  # on purpose
    assert proc.returncode == 0 and (tmp_path / "out4" / "results.json").exists(), proc.stdout + proc.stderr


TWO_SPEEDS = """
import random


SLOW = random.SystemRandom().random() < 0.5  # this process's speed, one of two, as a memory layout would choose it


def work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def test_two_speeds(benchmark):
    benchmark(work, 4140 if SLOW else 3000)


def test_steady(benchmark):
    benchmark(work, 3000)
"""


@SERIAL
def test_a_test_with_two_speeds_by_process_is_not_a_change(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "proj")
    commit(repo, {"bench/test_two.py": TWO_SPEEDS}, "v1")
    out = tmp_path / "out"
    proc = perfci(
        repo, "ab", "HEAD", "HEAD", "--pytest", "bench", "--pairs", "8", "--round-time", "0.05", "--out", str(out)
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = latency_rows(out)
    two = rows["bench/test_two.py::test_two_speeds@cpu"]
    assert two["verdict"] in ("inconclusive", "unchanged"), two
    assert rows["bench/test_two.py::test_steady@cpu"]["verdict"] not in ("regression", "improvement")
