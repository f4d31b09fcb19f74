"""Inputs that fuzzing (2026-12-02) found to end in a traceback, through the real CLI in a subprocess: each now
ends in one error line and exit code 2, or is read as it should be."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def perfci(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perfci", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def refused(proc: subprocess.CompletedProcess[str], words: str) -> bool:
    lines = proc.stderr.strip().splitlines()
    return (
        proc.returncode == 2 and "Traceback" not in proc.stderr and lines[0].startswith("error:") and words in lines[0]
    )


def _nested(results: Path, out: Path, levels: int) -> Path:
    """`results` with a list nested `levels` deep in its fingerprint (written as text: no recursion here)."""
    text = results.read_text()
    out.write_text(text.replace('"fingerprint": {', '"fingerprint": {"deep": ' + "[" * levels + "]" * levels + ", ", 1))
    return out


def test_deep_nesting_up_to_what_the_parser_reads_is_written_again_and_deeper_is_refused(
    tmp_path: Path, tmp_results: Path
) -> None:
    """500 levels in a free-form field made merge, compare --out, baseline update and history ingest run out of
    Python's recursion limit while copying, writing or pickling it."""
    deep = _nested(tmp_results, tmp_path / "deep.json", 1_000)
    merged = perfci("merge", str(deep), "--out", "merged", cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    assert '"deep":[[[' in (tmp_path / "merged" / "results.json").read_text().replace("\n", "").replace(" ", "")
    ingested = perfci("history", "ingest", str(deep), "--db", f"sqlite:///{tmp_path / 'h.db'}", cwd=tmp_path)
    assert ingested.returncode == 0, ingested.stderr
    deeper = _nested(tmp_results, tmp_path / "deeper.json", 3_000)
    assert refused(perfci("merge", str(deeper), "--out", "m2", cwd=tmp_path), "nests deeper than 1,024 levels")
    ingest = perfci("history", "ingest", str(deeper), "--db", f"sqlite:///{tmp_path / 'h2.db'}", cwd=tmp_path)
    assert refused(ingest, "nests deeper than 1,024 levels")


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("perfci.toml", b'name = "Jos\xe9"\n', "cannot read the configuration ('utf-8' codec"),
        ("perfci.toml", b'paths = ["x\\u0000y"]\n', "holds a NUL character"),
        ("perfci.toml", b'cpus = "0-99999999999"\n', "beyond the highest CPU number Linux allows (8191)"),
        ("perfci.toml", b"threads = 9000000000000000000\n", "at most 4096"),
        ("pyproject.toml", b"[tool]\nperfci = 5\n", "tool.perfci must be a table"),
    ],
)
def test_hostile_configuration_is_one_error(tmp_path: Path, name: str, content: bytes, words: str) -> None:
    """Before: a UnicodeDecodeError, a ValueError (NUL), memory filling up (a range of 10^11 CPUs), every case
    failing (threads past what torch takes), an AttributeError (tool.perfci not a table)."""
    (tmp_path / name).write_bytes(content)
    assert refused(perfci("list", "--suite", "default", "--config", name, cwd=tmp_path), words)


def test_a_pyproject_that_is_not_utf8_elsewhere_is_not_perfcis_business(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_bytes(b'[project]\nname = "x"\nauthors = [{name = "Jos\xe9"}]\n')
    listed = perfci("list", "--suite", "default", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr


def test_report_threshold_outside_0_to_10_is_one_error(tmp_path: Path, tmp_results: Path) -> None:
    """`perfci report A B --threshold -1` must be one error, not a ValueError traceback."""
    proc = perfci("report", str(tmp_results), str(tmp_results), "--threshold", "-1", "--out", "r.html", cwd=tmp_path)
    assert proc.returncode == 2 and "'-1' is not a fraction from 0 up" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "r.html").exists()


def test_outputs_over_inputs_and_unchecked_options_are_refused(tmp_path: Path, tmp_results: Path) -> None:
    """`report` must not write its HTML over the comparison it read, nor `merge --out` over the shard it merges;
    `merge --threshold nan` and `trend --min-effect nan` are refused (the trend gate would pass), a not-UTF-8
    expected-changes file is one error, and so is `history prune --keep 2**63`."""
    original = tmp_results.read_bytes()
    assert refused(perfci("report", str(tmp_results), "--out", str(tmp_results), cwd=tmp_path), "is one of the files")
    assert refused(perfci("merge", str(tmp_results), "--out", str(tmp_path), cwd=tmp_path), "is one of the files")
    assert tmp_results.read_bytes() == original
    merge = perfci(
        "merge", str(tmp_results), "--baseline", str(tmp_results), "--threshold", "nan", "--out", "m", cwd=tmp_path
    )
    assert merge.returncode == 2 and "'nan' is not a fraction" in merge.stderr and "Traceback" not in merge.stderr
    (tmp_path / "e.toml").write_bytes(b"\xff\xfe\x00garbage\x80")
    compare = perfci("compare", str(tmp_results), str(tmp_results), "--expected", "e.toml", cwd=tmp_path)
    assert refused(compare, "cannot read the expected-changes file")
    db = f"sqlite:///{tmp_path / 'h.db'}"
    assert refused(perfci("trend", "--db", db, "--min-effect", "nan", cwd=tmp_path), "--min-effect must be a fraction")
    prune = perfci("history", "prune", "--keep", str(2**63), "--db", db, cwd=tmp_path)
    assert prune.returncode == 2 and "Traceback" not in prune.stderr


WORKLOADS = {
    "collide.py": 'import perfci\n\n@perfci.workload(params={"a": ["1", "1,b=2"], "b": ["2,b=3", "3"]})\n'
    "def p(ctx, a, b):\n    return lambda: None\n",
    "nan_param.py": 'import perfci\n\n@perfci.workload(params={"x": [float("nan"), 1.0]})\n'
    "def q(ctx, x):\n    return lambda: None\n",
    "skip_raises.py": 'import perfci\n\n@perfci.workload(params={"n": [1]}, skip=lambda device, n: 1 / 0)\n'
    "def s(ctx, n):\n    return lambda: None\n",
    "exits.py": "import sys\nsys.exit(3)\n",
    # os._exit(0) at the end of a file ended `perfci run` with exit 0, nothing measured and nothing said
    "hard_exit.py": "import os\nimport perfci\n\n@perfci.workload\ndef w(ctx):\n    return lambda: None\n\n"
    "os._exit(0)\n",
    "loops.py": "while True:\n    pass\n",  # hung `perfci list` and `run` with no limit
}


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("collide.py", "give the same case id"),  # one of the two cases was dropped without a word
        ("nan_param.py", "that is not a str, int, finite float or bool"),  # no results.json was written at all
        ("skip_raises.py", "its skip predicate raised ZeroDivisionError"),  # a traceback
        ("exits.py", "importing the workload file raised SystemExit: 3"),  # exit 3 and nothing said
        ("hard_exit.py", "importing the workload file called os._exit(0)"),
        ("loops.py", "importing the workload file took longer than 1 s"),
    ],
)
def test_hostile_workload_definitions_are_one_error(tmp_path: Path, name: str, words: str) -> None:
    (tmp_path / name).write_text(WORKLOADS[name])
    if name == "loops.py":  # the limit made short (120 s in the product) by a sitecustomize on the path
        site = tmp_path / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text("import perfci.workloads.discovery as d\nd.IMPORT_TIMEOUT_S = 1.0\n")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
        proc = subprocess.run([sys.executable, "-m", "perfci", "list", name], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60, env=env)  # fmt: skip
        assert refused(proc, words), proc.stderr
        return
    assert refused(perfci("list", name, cwd=tmp_path), words)
    if name == "hard_exit.py":
        assert refused(perfci("run", name, "--rounds", "2", cwd=tmp_path), words)


@pytest.mark.parametrize(
    "prints",
    ['print("HELLO FROM IMPORT")', 'os.write(1, b"HELLO FROM IMPORT\\n")'],  # the second: file descriptor 1
)
def test_what_a_workload_file_prints_at_import_stays_out_of_json_output(tmp_path: Path, prints: str) -> None:
    (tmp_path / "loud.py").write_text(
        f'import os\nimport perfci\n{prints}\n\n@perfci.workload(params={{"n": [1]}})\n'
        "def t(ctx, n):\n    return lambda: None\n"
    )
    listed = perfci("list", "loud.py", "--format", "json", cwd=tmp_path)
    assert listed.returncode == 0 and "HELLO FROM IMPORT" in listed.stderr
    assert [c["id"] for c in json.loads(listed.stdout)] == ["loud.t[n=1]@cpu"]
