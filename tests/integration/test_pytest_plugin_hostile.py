"""The pytest plugin (perfci/pytest_plugin) against hostile options and `perf(...)` arguments found by fuzzing,
each in a real pytest session in a subprocess (as tests/integration/test_pytest_plugin.py runs them):

- `--perfci-out base --perfci-compare base/results.json` overwrote the baseline and compared it with itself
  (PASS on a 3x slowdown): now a usage error before any test runs, the baseline untouched;
- `--perfci-out` naming a file ended in a FileExistsError traceback: now a usage error;
- `--perfci-budget nan`/`inf` (now `--perfci-round-time`) passed and recorded `"budget_s": null`: now a usage error;
- `perf(fn, flops=nan)` (inf, 10**400, negative; `bytes=` too) stopped the whole results file from being
  written: now that call fails its own test and the other tests' results are written;
- `perf(fn, name="a\\ud800")` wrote a results file `perfci compare` refused: now that call fails its test.

A usage error is pytest's (exit 4) with one `ERROR:` line and no traceback. The fastest settings keep it quick.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from perfci.format.schema import json_schema, load_results

pytestmark = [pytest.mark.integration, pytest.mark.serial]  # timing-sensitive: run alone (README)
pytest_plugins = ["pytester"]

FAST = ["-p", "no:cacheprovider", "--perfci-rounds", "2", "--perfci-round-time", "0.01"]
# a test that leaves a marker when it runs: a usage error must come before any test does
MARKED = """
from pathlib import Path

def test_work(perf):
    Path("ran.marker").write_text("ran")
    perf(lambda: sum(range(20)))
"""


def _usage_error(result: pytest.RunResult, pattern: str, where: Path) -> None:
    """pytest's usage error: exit 4, one `ERROR:` line matching `pattern`, no traceback, no test run."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.outlines + result.errlines
    lines = [line for line in result.errlines if line.strip()]
    assert len(lines) == 1, lines
    result.stderr.fnmatch_lines([f"ERROR: {pattern}"])
    assert "Traceback" not in "\n".join(result.outlines + result.errlines)
    assert not (where / "ran.marker").exists()


def _results(path: Path) -> list[str]:
    """The case ids of a results file valid against the schema and read back by perfci's own reader."""
    doc = json.loads(path.read_text("utf-8"))
    jsonschema.validate(doc, json_schema())
    load_results(path)  # what `perfci compare` reads with: it refused a lone surrogate
    return [c["id"] for c in doc["cases"]]


def test_out_whose_results_are_the_baseline_is_refused(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_speed=MARKED)
    pytester.runpytest_subprocess(*FAST, "--perfci-out", "base").assert_outcomes(passed=1)
    (pytester.path / "ran.marker").unlink()
    (pytester.path / "link").symlink_to(pytester.path / "base", target_is_directory=True)
    before = (pytester.path / "base" / "results.json").read_bytes()

    for out, baseline in [
        ("base", "base/results.json"),  # the fuzzer's spelling
        ("base", "./base/../base/results.json"),  # another spelling of the same path
        ("link", "base/results.json"),  # the out folder is a symlink to the baseline's
        ("fresh", "fresh/results.json"),  # not written yet: the run would write it, then compare it with itself
    ]:
        result = pytester.runpytest_subprocess(*FAST, "--perfci-out", out, "--perfci-compare", baseline)
        pattern = f"--perfci-compare *results.json is the results.json that --perfci-out {out} writes*"
        _usage_error(result, pattern, pytester.path)
        assert (pytester.path / "base" / "results.json").read_bytes() == before  # the baseline untouched
        assert not (pytester.path / "fresh").exists()


@pytest.mark.parametrize(
    ("out", "pattern"),
    [
        ("afile", "--perfci-out afile: *afile is a file, not a folder*"),
        ("afile/sub", "--perfci-out afile/sub: *afile is a file, not a folder*"),
        ("taken", "--perfci-out taken: *results.json is a folder*"),
    ],
    ids=["file", "below-a-file", "results-json-a-folder"],
)
def test_out_that_is_not_a_folder_is_refused(pytester: pytest.Pytester, out: str, pattern: str) -> None:
    pytester.makepyfile(test_speed=MARKED)
    (pytester.path / "afile").write_text("not a folder")
    (pytester.path / "taken" / "results.json").mkdir(parents=True)
    _usage_error(pytester.runpytest_subprocess(*FAST, "--perfci-out", out), pattern, pytester.path)
    assert (pytester.path / "afile").read_text() == "not a folder"


def test_an_unwritable_out_is_one_line_and_exit_2(pytester: pytest.Pytester) -> None:
    """What the configure-time checks cannot see (here results.json a link to a full device; in life a full disk
    or a missing permission) is one line in the summary and perfci's exit 2, not a traceback."""
    pytester.makepyfile(test_speed=MARKED)
    (pytester.path / "out").mkdir()
    (pytester.path / "out" / "results.json").symlink_to("/dev/full")  # written into: "No space left on device"
    result = pytester.runpytest_subprocess(*FAST, "--perfci-out", "out")
    result.assert_outcomes(passed=1)
    assert result.ret == 2
    result.stdout.fnmatch_lines(["perfci could not write *results.json: *"])
    assert "Traceback" not in "\n".join(result.outlines + result.errlines)


@pytest.mark.parametrize("round_time", ["nan", "inf", "-inf", "0", "-1", "3601", "x"])
def test_round_time_outside_its_bounds_is_refused(pytester: pytest.Pytester, round_time: str) -> None:
    """The bounds of `perfci run --round-time` (the options table's), for the plugin's flag too."""
    pytester.makepyfile(test_speed=MARKED)
    result = pytester.runpytest_subprocess(*FAST, f"--perfci-round-time={round_time}", "--perfci-out", "out")
    _usage_error(result, "--perfci-round-time: must be a number > 0 and at most 3600 (seconds), not *", pytester.path)
    assert not (pytester.path / "out").exists()


def test_threshold_nan_is_refused_before_the_tests_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_speed=MARKED)
    result = pytester.runpytest_subprocess(*FAST, "--perfci-threshold", "nan")
    _usage_error(result, "--perfci-threshold: 'nan' is not a fraction from 0 up; write 3% or 0.03.", pytester.path)


def test_job_noise_is_read_like_a_threshold(pytester: pytest.Pytester) -> None:
    """`--perfci-job-noise` takes `35%` or `0.35` (into the comparison's settings), and refuses what is not one."""
    pytester.makepyfile(test_speed=MARKED)
    result = pytester.runpytest_subprocess(*FAST, "--perfci-job-noise", "7")
    _usage_error(result, "--perfci-job-noise: *", pytester.path)
    pytester.runpytest_subprocess(*FAST, "--perfci-out", "base").assert_outcomes(passed=1)
    args = ("--perfci-job-noise", "35%", "--perfci-compare", "base/results.json", "--perfci-out", "head")
    pytester.runpytest_subprocess(*FAST, *args).assert_outcomes(passed=1)
    doc = json.loads((pytester.path / "head" / "comparison.json").read_text("utf-8"))
    assert doc["settings"]["job_noise"] == pytest.approx(0.35) and doc["settings"]["job_noise_from"] == "given"


BAD_WORK = """
import numpy as np
import pytest

BAD = {"nan": float("nan"), "inf": float("inf"), "huge-int": 10**400, "negative": -1.0, "text": "1e9"}


@pytest.mark.parametrize("arg", ["flops", "bytes"])
@pytest.mark.parametrize("value", list(BAD.values()), ids=list(BAD))
def test_bad(perf, arg, value):
    perf(lambda: None, **{arg: value})


def test_good(perf):
    assert perf(lambda: sum(range(20)), flops=10**12, bytes=0) is not None


def test_numpy_scalars(perf):
    assert perf(lambda: sum(range(20)), name="np", flops=np.int64(10**9), bytes=np.float32(64)) is not None
"""


def test_bad_flops_or_bytes_fail_their_own_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_work=BAD_WORK)
    result = pytester.runpytest_subprocess(*FAST, "--perfci-out", "out", "-rf")
    result.assert_outcomes(failed=10, passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the failed tests, not a crash at session finish
    for arg in ("flops", "bytes"):
        result.stdout.fnmatch_lines_random(
            [
                f"*ValueError: perf(): {arg}=nan is not a number from 0 to 1e+30*",
                f"*ValueError: perf(): {arg}=inf is not a number*",
                f"*ValueError: perf(): {arg}=1000000000*is not a number*",
                f"*ValueError: perf(): {arg}=-1.0 is not a number*",
                f"*TypeError: perf(): {arg}= must be a number, not '1e9'*",
            ]
        )
    assert "INTERNALERROR" not in result.stdout.str()
    ids = _results(pytester.path / "out" / "results.json")
    assert ids == ["test_work.py::test_good@cpu", "test_work.py::test_numpy_scalars::np@cpu"]


def test_bad_flops_fail_with_perfci_disable_too(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_work="def test_bad(perf):\n    perf(lambda: None, flops=float('nan'))\n")
    result = pytester.runpytest_subprocess(*FAST, "--perfci-disable")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ValueError: perf(): flops=nan is not a number*"])


def test_a_name_utf8_cannot_hold_fails_its_own_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_names="""
def test_surrogate(perf):
    perf(lambda: None, name="a\\ud800")


def test_unicode(perf):
    assert perf(lambda: sum(range(20)), name="größe·π") is not None
"""
    )
    result = pytester.runpytest_subprocess(*FAST, "--perfci-out", "out")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*ValueError: perf(): name 'a\\ud800' cannot be written as UTF-8*"])
    ids = _results(pytester.path / "out" / "results.json")
    assert ids == ["test_names.py::test_unicode::größe·π@cpu"]


def test_a_baseline_that_cannot_be_read_is_refused_before_any_test_runs(pytester: pytest.Pytester) -> None:
    """A missing, empty or corrupt --perfci-compare file: one usage error at the start (it came after every test
    had been measured)."""
    pytester.makepyfile(test_speed=MARKED)
    (pytester.path / "empty.json").write_text("")
    (pytester.path / "cut.json").write_text('{"schema": "perfci.results", "cases": [')
    for baseline, pattern in [
        ("nowhere.json", "--perfci-compare *nowhere.json: no such file*"),
        ("empty.json", "--perfci-compare *empty.json: *"),
        ("cut.json", "--perfci-compare *cut.json: *"),
    ]:
        result = pytester.runpytest_subprocess(*FAST, "--perfci-compare", baseline)
        _usage_error(result, pattern, pytester.path)
        assert not (pytester.path / "ran.marker").exists()  # no test ran


def test_xdist_with_out_or_compare_is_refused_and_a_folder_baseline_is_named(pytester: pytest.Pytester) -> None:
    """`pytest -n 2 --perfci-out base` exited 0 saying nothing was written, while the workers each wrote part of
    base/results.json over the good one; a folder given as the baseline was "no such file" (a user audit)."""
    pytester.makepyfile(test_speed=MARKED)
    pytester.runpytest_subprocess(*FAST, "--perfci-out", "base").assert_outcomes(passed=1)
    good = (pytester.path / "base" / "results.json").read_bytes()
    (pytester.path / "ran.marker").unlink()
    for args in (["--perfci-out", "base"], ["--perfci-compare", "base/results.json"], ["--perfci-out=b2"]):
        result = pytester.runpytest_subprocess(*FAST, "-n", "2", *args)
        _usage_error(
            result, "--perfci-out and --perfci-compare measure in one process, not in pytest-xdist*", pytester.path
        )
    assert (pytester.path / "base" / "results.json").read_bytes() == good and not (pytester.path / "b2").exists()
    assert pytester.runpytest_subprocess(*FAST, "-n", "0", "--perfci-compare", "base/results.json").ret == 0
    (pytester.path / "ran.marker").unlink()
    _usage_error(pytester.runpytest_subprocess(*FAST, "--perfci-compare", "base"), "--perfci-compare *: a folder*",
                 pytester.path)  # fmt: skip


def test_last_failed_only_leaves_the_other_tests_out_not_missing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--lf` collects only the files with a test that failed last time and reports no deselection: the
    baseline's other tests were `missing` and failed the gate (a user audit)."""
    fast = [a for a in FAST if a not in ("-p", "no:cacheprovider")]  # --lf needs the cache
    pytester.makepyfile(
        test_a=(
            "def test_one(perf):\n    perf(lambda: sum(range(20)))\n\n"
            "def test_two(perf):\n    perf(lambda: sum(range(30)))\n"
        ),
        test_b="import os\n\ndef test_flaky(perf):\n    assert not os.environ.get('BOOM')\n    perf(lambda: 1)\n",
    )
    pytester.runpytest_subprocess(*fast, "--perfci-out", "base").assert_outcomes(passed=3)
    with monkeypatch.context() as m:
        m.setenv("BOOM", "1")
        pytester.runpytest_subprocess(*fast).assert_outcomes(passed=2, failed=1)  # the cache records the failure
    result = pytester.runpytest_subprocess(*fast, "--lf", "--perfci-compare", "base/results.json")
    result.assert_outcomes(passed=1)
    out = "\n".join(result.outlines + result.errlines)
    assert result.ret == 0, out
    assert "FAIL" not in out and "2 missing" not in out, out
