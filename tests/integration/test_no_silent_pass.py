"""Nothing compared is never a pass, through real processes: pytest sessions whose rootdir moves with the command
line still compare every case; a test that disappeared fails the session unless allowed or left out on purpose;
`perfci compare` exits 2 on two files with no case in common and 1 on a missing case."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfci.format.schema import dump_results
from tests.conftest import make_case, make_run

pytestmark = [pytest.mark.integration, pytest.mark.serial]  # timing-sensitive: run alone (README)

TESTS = """
def work(n):
    return sum(i * i for i in range(n))


def test_bench(benchmark):
    benchmark(work, 300)


def test_perf(perf):
    perf(lambda: work(200))
    perf(lambda: work(100), name="small")


def test_gone(perf):
    perf(lambda: work(50))
"""
FAST = ["-p", "no:cacheprovider", "-q", "--perfci-rounds", "2"]


def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest run from `folder`, as a user runs it (the plugin loaded from its entry point)."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", *FAST, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=300
    )


def perfci(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "perfci", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def rows(comparison: Path) -> dict[str, str]:
    """Case id -> verdict of the latency row, from a comparison.json."""
    doc = json.loads(comparison.read_text("utf-8"))
    return {r["case_id"]: r["verdict"] for r in doc["rows"] if r["metric"].startswith("latency")}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder of tests with no configuration file: `x/bench/test_b.py`."""
    (tmp_path / "x" / "bench").mkdir(parents=True)
    (tmp_path / "x" / "bench" / "test_b.py").write_text(TESTS)
    return tmp_path / "x"


def test_a_baseline_passed_after_a_space_from_elsewhere_still_compares_every_case(project: Path) -> None:
    elsewhere = project.parent / "elsewhere"
    made = pytest_in(project, "bench", "--perfci-out", str(elsewhere / "base"))
    assert made.returncode == 0, made.stdout + made.stderr
    base = json.loads((elsewhere / "base" / "results.json").read_text("utf-8"))
    ids = {c["id"] for c in base["cases"]}
    assert ids == {
        "bench/test_b.py::test_bench@cpu",
        "bench/test_b.py::test_perf@cpu",
        "bench/test_b.py::test_perf::small@cpu",
        "bench/test_b.py::test_gone@cpu",
    }
    # the path after a space: pytest's rootdir moves to the common parent of bench/ and elsewhere/
    compared = pytest_in(
        project, "bench", "--perfci-compare", str(elsewhere / "base" / "results.json"),
        "--perfci-out", str(elsewhere / "cand"), "--perfci-job-noise", "0.5", "-v",  # -q -v: the header shows
    )  # fmt: skip
    assert f"rootdir: {project.parent}" in compared.stdout  # pytest's rootdir did move (the case in point)
    verdicts = rows(elsewhere / "cand" / "comparison.json")
    assert set(verdicts) == ids, compared.stdout
    assert not {"missing", "new"} & set(verdicts.values())
    assert compared.returncode == 0, compared.stdout + compared.stderr


def test_a_baseline_with_ids_relative_to_an_earlier_rootdir_still_matches(project: Path) -> None:
    out = project.parent / "out"
    assert pytest_in(project, "bench", "--perfci-out", str(out / "base")).returncode == 0
    path = out / "base" / "results.json"
    doc = json.loads(path.read_text("utf-8"))
    for case in doc["cases"]:  # as perfci wrote them when pytest's rootdir was the folder above the project
        case["id"] = "x/" + case["id"]
        case["workload"] = "x/" + case["workload"]
    path.write_text(json.dumps(doc), "utf-8")
    compared = pytest_in(
        project, "bench", f"--perfci-compare={path}", "--perfci-out", str(out / "cand"), "--perfci-job-noise", "0.5"
    )
    verdicts = rows(out / "cand" / "comparison.json")
    assert len(verdicts) == 4 and not {"missing", "new"} & set(verdicts.values()), compared.stdout
    assert compared.returncode == 0, compared.stdout + compared.stderr


def test_a_test_that_disappeared_fails_the_session_unless_allowed_or_left_out(project: Path) -> None:
    base = project.parent / "base"
    assert pytest_in(project, "bench", "--perfci-out", str(base)).returncode == 0
    baseline = f"--perfci-compare={base / 'results.json'}"
    noise = ("--perfci-job-noise", "0.5")
    deselected = pytest_in(project, "bench", baseline, *noise, "-k", "not gone")
    assert deselected.returncode == 0, deselected.stdout + deselected.stderr
    test_file = project / "bench" / "test_b.py"
    test_file.write_text(TESTS.replace("def test_gone(perf):", "def _gone(perf):"))
    removed = pytest_in(project, "bench", baseline, *noise)
    assert removed.returncode == 1, removed.stdout + removed.stderr
    assert "bench/test_b.py::test_gone@cpu" in removed.stdout and "missing" in removed.stdout
    allowed = pytest_in(project, "bench", baseline, *noise, "--perfci-allow-missing")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    test_file.write_text(TESTS.replace("def test_gone(perf):", "@__import__('pytest').mark.skip\ndef test_gone(perf):"))
    skipped = pytest_in(project, "bench", baseline, *noise)
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    # a second file skipped whole at collection (`allow_module_level`, `importorskip`): left out as skipped, not
    # `missing` (its tests never reach the run-time report; it failed as 1 missing, a user audit)
    other = project / "bench" / "test_c.py"
    other.write_text("def test_c(perf):\n    perf(lambda: sum(range(100)))\n")
    test_file.write_text(TESTS)
    both = project.parent / "both"
    assert pytest_in(project, "bench", "--perfci-out", str(both)).returncode == 0
    other.write_text("import pytest\npytest.importorskip('no_such_module_here')\n" + other.read_text())
    cand = project.parent / "cand"
    whole = pytest_in(project, "bench", f"--perfci-compare={both / 'results.json'}", *noise, "--perfci-out", str(cand))
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert "missing" not in set(rows(cand / "comparison.json").values()), whole.stdout
    said = json.loads((cand / "comparison.json").read_text("utf-8"))["warnings"]
    assert "1 baseline case(s) left out on purpose were not compared (skipped: 1)" in said, said
    left = json.loads((cand / "results.json").read_text("utf-8"))["settings"]["left_out"]
    assert left == {"bench/test_c.py": "skipped: could not import 'no_such_module_here': No module named "
                    "'no_such_module_here'"}  # fmt: skip


def test_compare_exit_codes_for_nothing_in_common_and_a_missing_case(tmp_path: Path) -> None:
    dump_results(make_run([make_case("alpha", 1e-3), make_case("beta", 1e-3)]), tmp_path / "base.json")
    dump_results(make_run([make_case("gamma", 1e-3), make_case("delta", 1e-3)]), tmp_path / "other.json")
    dump_results(make_run([make_case("alpha", 1e-3, seed=1)]), tmp_path / "fewer.json")
    nothing = perfci("compare", "base.json", "other.json", cwd=tmp_path)
    assert nothing.returncode == 2
    assert "t.alpha[n=8]@cpu" in nothing.stderr and "t.gamma[n=8]@cpu" in nothing.stderr
    assert "Traceback" not in nothing.stderr
    missing = perfci("compare", "base.json", "fewer.json", "--format", "json", cwd=tmp_path)
    assert missing.returncode == 1, missing.stderr
    verdicts = {r["case_id"]: r["verdict"] for r in json.loads(missing.stdout)["rows"]}
    assert verdicts["t.beta[n=8]@cpu"] == "missing"
    assert perfci("compare", "base.json", "fewer.json", "--allow-missing", cwd=tmp_path).returncode == 0
    expected = tmp_path / "perfci-expected.toml"
    expected.write_text('version = 1\n[[change]]\ncase = "t.beta*"\nremoved = true\nreason = "beta is gone"\n')
    assert perfci("compare", "base.json", "fewer.json", cwd=tmp_path).returncode == 0


WORKLOADS = """
import perfci


@perfci.workload()
def one(ctx):
    return lambda: sum(range(100))


@perfci.workload()
def two(ctx):
    return lambda: sum(range(200))
"""


def test_run_against_a_baseline_counts_deselected_cases_left_out_and_removed_ones_missing(tmp_path: Path) -> None:
    (tmp_path / "wl.py").write_text(WORKLOADS)
    fast = ["--rounds", "2", "--round-time", "0.02"]
    assert perfci("run", "wl.py", *fast, "--out", "base", cwd=tmp_path).returncode == 0
    baseline = ["--baseline", "base/results.json"]
    deselected = perfci("run", "wl.py", "-k", "one", *fast, *baseline, "--out", "k", cwd=tmp_path)
    assert deselected.returncode == 0, deselected.stdout + deselected.stderr
    recorded = json.loads((tmp_path / "k" / "results.json").read_text("utf-8"))["settings"]["left_out"]
    assert recorded == {"wl.two@cpu": "deselected: -k or --suite"}
    # with no baseline, the run records what it left out all the same: a later compare knows (a user audit: it
    # counted the case missing, exit 1)
    alone = perfci("run", "wl.py", "-k", "one", *fast, "--out", "alone", cwd=tmp_path)
    assert alone.returncode == 0, alone.stdout + alone.stderr
    recorded = json.loads((tmp_path / "alone" / "results.json").read_text("utf-8"))["settings"]["left_out"]
    assert recorded == {"wl.two@cpu": "deselected: -k or --suite"}
    later = perfci("compare", "base/results.json", "alone/results.json", cwd=tmp_path)
    assert later.returncode == 0 and "missing" not in later.stderr.split("PASS:")[-1], later.stderr
    (tmp_path / "wl.py").write_text(WORKLOADS.replace("@perfci.workload()\ndef two", "def two"))
    removed = perfci("run", "wl.py", *fast, *baseline, "--out", "gone", cwd=tmp_path)
    assert removed.returncode == 1, removed.stdout + removed.stderr
    assert rows(tmp_path / "gone" / "comparison.json")["wl.two@cpu"] == "missing"
    allowed = perfci("run", "wl.py", *fast, *baseline, "--out", "allowed", "--allow-missing", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
