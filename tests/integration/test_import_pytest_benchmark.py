"""A real pytest-benchmark run (in a subprocess) imported as perfci results and compared."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from perfci.format.schema import load_results

pytestmark = [pytest.mark.integration, pytest.mark.serial]  # timing-sensitive: run alone (README)

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
    # the ids the pytest plugin gives the same tests: an imported session is a baseline for its gate
    ids = sorted(c.id for c in imported.cases)
    assert ids == ["test_bench.py::test_sum[1000]@cpu", "test_bench.py::test_sum[100]@cpu"]
    # the raw timings in consecutive blocks, one round each, so that a comparison can estimate the noise
    assert all(len(c.rounds) == 5 and all(len(r.samples) >= 3 for r in c.rounds) for c in imported.cases)
    first = imported.cases[0].rounds[0].telemetry
    assert first["in_process"] is True and first["imported_block"] == [0, 5]
    assert first["pytest_benchmark_stats"]["rounds"] == sum(len(r.samples) for r in imported.cases[0].rounds)
    same = run("-m", "perfci", "compare", "imported.json", "imported.json", "--format", "json", cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr
    assert {r["verdict"] for r in json.loads(same.stdout)["rows"]} == {"unchanged"}


def test_an_imported_session_is_a_baseline_for_the_pytest_plugins_gate(tmp_path: Path, bench_json: Path) -> None:
    """pytest-benchmark's saved session, imported, then `pytest --perfci-compare` in the folder of the tests: every
    test is matched and compared (nothing missing, nothing new)."""
    base = tmp_path / "imported.json"
    proc = run("-m", "perfci", "import", "pytest-benchmark", str(bench_json), "--out", str(base), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    tests = bench_json.parent
    out = tmp_path / "gate"
    gate = run("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_bench.py", f"--perfci-compare={base}",
               "--perfci-out", str(out), "--perfci-rounds", "2", cwd=tests)  # fmt: skip
    assert gate.returncode in (0, 1), gate.stdout + gate.stderr  # the verdicts themselves are this machine's
    rows = json.loads((out / "comparison.json").read_text())["rows"]
    compared = {r["case_id"] for r in rows if r["verdict"] not in ("missing", "new")}
    assert compared == {"test_bench.py::test_sum[1000]@cpu", "test_bench.py::test_sum[100]@cpu"}, rows
    assert not [r for r in rows if r["verdict"] in ("missing", "new")], rows


def test_an_imported_slowdown_gates(tmp_path: Path, bench_json: Path) -> None:
    """Two imports of separate sessions: a copy whose timings are all 1.5x is a regression; with too few raw
    timings (4: one block) the comparison says why it cannot decide. The timings are seeded (2% noise) in the
    real file's structure, so the verdicts do not depend on how busy this machine was when it ran the tests."""
    rng = random.Random(7)
    doc = json.loads(bench_json.read_text())
    for bench in doc["benchmarks"]:
        bench["stats"]["data"] = [1e-5 * (1 + rng.gauss(0, 0.02)) for _ in range(40)]
    (tmp_path / "quiet.json").write_text(json.dumps(doc))
    doc["datetime"] = "2026-03-01T12:30:00"
    for bench in doc["benchmarks"]:
        bench["stats"]["data"] = [1.5e-5 * (1 + rng.gauss(0, 0.02)) for _ in range(40)]
    (tmp_path / "slow.json").write_text(json.dumps(doc))
    for name, source in (("base.json", "quiet.json"), ("head.json", "slow.json")):
        proc = run("-m", "perfci", "import", "pytest-benchmark", source, "--out", name, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    slow = run("-m", "perfci", "compare", "base.json", "head.json", "--format", "json", cwd=tmp_path)
    assert slow.returncode == 1, slow.stdout + slow.stderr
    assert {r["verdict"] for r in json.loads(slow.stdout)["rows"]} == {"regression"}
    for bench in doc["benchmarks"]:
        bench["stats"]["data"] = bench["stats"]["data"][:4]
    (tmp_path / "short.json").write_text(json.dumps(doc))
    imported = run("-m", "perfci", "import", "pytest-benchmark", "short.json", "--out", "s.json", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    short = run("-m", "perfci", "compare", "base.json", "s.json", "--format", "json", cwd=tmp_path)
    rows = json.loads(short.stdout)["rows"]
    assert short.returncode == 0 and {r["verdict"] for r in rows} == {"inconclusive"}
    assert all("too few rounds" in r["note"] for r in rows)


def test_import_without_raw_data_is_refused(tmp_path: Path, bench_json: Path) -> None:
    doc = json.loads(bench_json.read_text())
    for bench in doc["benchmarks"]:
        bench["stats"].pop("data", None)
    stripped = tmp_path / "stripped.json"
    stripped.write_text(json.dumps(doc))
    proc = run("-m", "perfci", "import", "pytest-benchmark", str(stripped), cwd=tmp_path)
    assert proc.returncode == 2
    assert "--benchmark-save-data" in proc.stderr
    assert not (tmp_path / "stripped.perfci.json").exists() and not (tmp_path / "results.json").exists()
    # a session that measured nothing: no empty results file to serve as a baseline that compares nothing
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({**doc, "benchmarks": []}))
    proc = run("-m", "perfci", "import", "pytest-benchmark", str(empty), cwd=tmp_path)
    assert proc.returncode == 2 and "holds no benchmarks" in proc.stderr, proc.stderr
    assert not (tmp_path / "empty.perfci.json").exists()


def test_two_sessions_imported_without_out_keep_both(tmp_path: Path, bench_json: Path) -> None:
    """Each import is named after its source: the second session's import does not replace the first's."""
    doc = json.loads(bench_json.read_text())
    (tmp_path / "monday.json").write_text(json.dumps(doc))
    for bench in doc["benchmarks"]:
        bench["stats"]["data"] = [x * 1.5 for x in bench["stats"]["data"]]
    (tmp_path / "tuesday.json").write_text(json.dumps(doc))
    for name in ("monday", "tuesday"):
        proc = run("-m", "perfci", "import", "pytest-benchmark", f"{name}.json", cwd=tmp_path)
        assert proc.returncode == 0 and f"into {name}.perfci.json" in proc.stderr, proc.stderr
    monday, tuesday = (load_results(tmp_path / f"{n}.perfci.json") for n in ("monday", "tuesday"))
    assert monday.cases[0].rounds[0].samples != tuesday.cases[0].rounds[0].samples
    gate = run("-m", "perfci", "compare", "monday.perfci.json", "tuesday.perfci.json", cwd=tmp_path)
    assert gate.returncode == 1, gate.stdout + gate.stderr  # every timing 1.5x: a regression
    # two sessions saved under one file name are two runs in the history store (the second was skipped as
    # "already stored": the run id came from the file name); the same file ingested again is one
    (tmp_path / "tuesday.json").rename(tmp_path / "again.json")
    (tmp_path / "monday.json").rename(tmp_path / "session.json")
    assert (
        run("-m", "perfci", "import", "pytest-benchmark", "session.json", "--out", "a.json", cwd=tmp_path).returncode
        == 0
    )
    (tmp_path / "again.json").rename(tmp_path / "session.json")
    assert (
        run("-m", "perfci", "import", "pytest-benchmark", "session.json", "--out", "b.json", cwd=tmp_path).returncode
        == 0
    )
    a, b = load_results(tmp_path / "a.json"), load_results(tmp_path / "b.json")
    assert a.run_id != b.run_id and a.run_id.startswith("pytest-benchmark-session-")
    db = f"sqlite:///{tmp_path / 'h.db'}"
    stored = run("-m", "perfci", "history", "ingest", "a.json", "b.json", "a.json", "--db", db, cwd=tmp_path)
    assert stored.returncode == 0 and "ingested 2 run(s)" in stored.stderr, stored.stderr
    # the runner class has the core count, as perfci's own runs on the machine do
    machine = json.loads(bench_json.read_text())["machine_info"]
    cores = machine["cpu"].get("count")
    if isinstance(cores, int):
        assert a.fingerprint["cpu_logical_cores"] == cores
    # the OS and Python under perfci's own names (the report showed "OS ?" and "Python ?")
    assert a.fingerprint["python"] == machine["python_version"] and a.fingerprint["os"].startswith(machine["system"])


def test_out_naming_the_source_is_refused_and_the_source_kept(tmp_path: Path, bench_json: Path) -> None:
    source = tmp_path / "session.json"
    source.write_bytes(bench_json.read_bytes())
    proc = run("-m", "perfci", "import", "pytest-benchmark", "session.json", "--out", "./session.json", cwd=tmp_path)
    assert proc.returncode == 2 and "would replace the source" in proc.stderr, proc.stderr
    assert source.read_bytes() == bench_json.read_bytes()


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
