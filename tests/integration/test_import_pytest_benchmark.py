"""A real pytest-benchmark run (in a subprocess) imported as perfci results and compared."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from perfci.schema import load_results

pytestmark = pytest.mark.integration

BENCH = """
import pytest

@pytest.mark.parametrize("n", [100, 1000])
def test_sum(benchmark, n):
    data = list(range(n))
    benchmark(sum, data)
"""


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def bench_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("bench")
    (tmp / "test_bench.py").write_text(BENCH)
    proc = run(
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "test_bench.py",
        "--benchmark-json=bench.json",
        "--benchmark-max-time=0.05",
        cwd=tmp,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp / "bench.json"


def test_import_and_compare(tmp_path: Path, bench_json: Path) -> None:
    proc = run("-m", "perfci", "import", "pytest-benchmark", str(bench_json), "--out", "imported.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    imported = load_results(tmp_path / "imported.json")
    assert sorted(c.id for c in imported.cases) == ["test_bench.test_sum[n=1000]@cpu", "test_bench.test_sum[n=100]@cpu"]
    assert all(len(c.rounds) == 1 and len(c.rounds[0].samples) >= 5 for c in imported.cases)
    same = run("-m", "perfci", "compare", "imported.json", "imported.json", cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr


def test_import_without_raw_data_is_refused(tmp_path: Path, bench_json: Path) -> None:
    doc = json.loads(bench_json.read_text())
    for bench in doc["benchmarks"]:
        bench["stats"].pop("data", None)
    stripped = tmp_path / "stripped.json"
    stripped.write_text(json.dumps(doc))
    proc = run("-m", "perfci", "import", "pytest-benchmark", str(stripped), cwd=tmp_path)
    assert proc.returncode == 2
    assert "--benchmark-save-data" in proc.stderr
    assert not (tmp_path / "results.json").exists()


def test_import_reads_the_time_in_utc_and_refuses_one_that_is_not_a_time(tmp_path: Path, bench_json: Path) -> None:
    doc = json.loads(bench_json.read_text())
    doc["datetime"] = "2026-03-01T12:30:00.250000+05:00"  # an offset: converted (it was written with a Z behind it)
    shifted = tmp_path / "shifted.json"
    shifted.write_text(json.dumps(doc))
    proc = run("-m", "perfci", "import", "pytest-benchmark", str(shifted), "--out", "s.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert load_results(tmp_path / "s.json").started_at == "2026-03-01T07:30:00.250000Z"
    doc["datetime"] = "yesterday"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    proc = run("-m", "perfci", "import", "pytest-benchmark", str(bad), "--out", "b.json", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert (
        proc.stderr.strip()
        == f"error: {bad}: invalid pytest-benchmark file at datetime: 'yesterday' is not an ISO 8601 time."
    )
    assert not (tmp_path / "b.json").exists()
