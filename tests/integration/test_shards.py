"""`perfci run --shard I/N` and `perfci merge`: shards cover every case exactly once, and the merged run holds
the same cases as an unsharded run, with one results.json, report, summary and exit code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

WORKLOAD = """
import perfci

FAST = {"warmup_s": 0.002, "min_samples": 3, "budget_s": 0.01, "min_sample_s": 0.0005}


@perfci.workload(params={"n": [1, 2, 3, 4, 5, 6]}, timing=FAST)
def tiny(ctx, n):
    data = list(range(100 * n))
    return lambda: sum(data)
"""


def perfci(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perfci", *args], cwd=cwd, capture_output=True, text=True, timeout=240)


def case_ids(path: Path) -> list[str]:
    return [c["id"] for c in json.loads(path.read_text())["cases"]]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shards")
    (root / "wl.py").write_text(WORKLOAD)
    for name, extra in (("all", ()), ("s1", ("--shard", "1/2")), ("s2", ("--shard", "2/2"))):
        proc = perfci(root, "run", "wl.py", "--rounds", "2", "--runner", "ci", "--out", name, *extra)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return root


def test_shards_cover_every_case_exactly_once(runs: Path) -> None:
    one, two = case_ids(runs / "s1" / "results.json"), case_ids(runs / "s2" / "results.json")
    assert one and two and not set(one) & set(two)
    assert sorted(one + two) == sorted(case_ids(runs / "all" / "results.json"))


def test_merge_gives_the_cases_of_an_unsharded_run(runs: Path) -> None:
    proc = perfci(runs, "merge", "s1/results.json", "s2/results.json", "--out", "merged", "--runner", "ci")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    merged = runs / "merged"
    assert sorted(case_ids(merged / "results.json")) == sorted(case_ids(runs / "all" / "results.json"))
    assert (merged / "report.html").exists() and (merged / "summary.md").exists()
    # against a baseline: the verdict table, as `run --baseline` prints it (only the headline was printed)
    args = ("merge", "s1/results.json", "s2/results.json", "--out", "merged-b", "--baseline", "all/results.json")
    proc = perfci(runs, *args, "--runner", "ci", "--exit-zero")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = sorted(case_ids(runs / "all" / "results.json"))[0]
    assert first in proc.stdout and "latency" in proc.stdout, proc.stdout


def test_merge_refuses_overlapping_shards_in_one_line(runs: Path) -> None:
    proc = perfci(runs, "merge", "s1/results.json", "all/results.json", "--out", "bad")
    assert proc.returncode == 2
    assert "both hold case" in proc.stderr and "Traceback" not in proc.stderr
    assert not (runs / "bad" / "results.json").exists()


def test_merge_refuses_different_settings(runs: Path) -> None:
    proc = perfci(runs, "run", "wl.py", "--rounds", "3", "--shard", "2/2", "--runner", "ci", "--out", "s2r3")
    assert proc.returncode == 0, proc.stderr
    proc = perfci(runs, "merge", "s1/results.json", "s2r3/results.json", "--out", "bad2")
    assert proc.returncode == 2 and "different settings (rounds)" in proc.stderr


def test_bad_shard_is_a_usage_error(runs: Path) -> None:
    proc = perfci(runs, "run", "wl.py", "--shard", "3/2")
    assert proc.returncode == 2 and "--shard" in proc.stderr


def test_the_results_record_the_shard_and_merge_refuses_a_missing_one(runs: Path) -> None:
    settings = json.loads((runs / "s1" / "results.json").read_text())["settings"]
    assert settings["shard"] == "1/2"
    assert "shard" not in json.loads((runs / "all" / "results.json").read_text())["settings"]
    proc = perfci(runs, "merge", "s1/results.json", "--out", "half")
    assert proc.returncode == 2 and "shard(s) 2/2 missing" in proc.stderr and "Traceback" not in proc.stderr
    assert not (runs / "half" / "results.json").exists()


def test_an_empty_shard_exits_0_with_an_empty_results_file(runs: Path) -> None:
    proc = perfci(runs, "run", "wl.py", "--rounds", "2", "--runner", "ci", "--shard", "7/7", "--out", "s7")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "holds no case" in proc.stderr
    assert case_ids(runs / "s7" / "results.json") == []
    assert json.loads((runs / "s7" / "results.json").read_text())["settings"]["shard"] == "7/7"


def test_shards_by_durations_cover_every_case_once(runs: Path) -> None:
    for index in (1, 2):
        args = ("--shard", f"{index}/2", "--durations", "all/results.json", "--out", f"d{index}")
        proc = perfci(runs, "run", "wl.py", "--rounds", "2", "--runner", "ci", *args)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    one, two = case_ids(runs / "d1" / "results.json"), case_ids(runs / "d2" / "results.json")
    assert one and two and sorted(one + two) == sorted(case_ids(runs / "all" / "results.json"))
    proc = perfci(runs, "merge", "d1/results.json", "d2/results.json", "--out", "dmerged", "--runner", "ci")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # a shard split by another file (here: by count) may miss a case between them: refused
    proc = perfci(runs, "merge", "d1/results.json", "s2/results.json", "--out", "dbad")
    assert proc.returncode == 2 and "different settings (shard_durations)" in proc.stderr
