"""CLI exit codes and messages through typer's CliRunner (no measuring: results files are synthetic)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.cli import app, parse_size
from perfci.errors import UsageError
from perfci.format.model import RunResult
from perfci.format.schema import dump_results
from tests.conftest import make_case, make_run

runner = CliRunner()


def test_compare_identical_exits_0(tmp_results: Path) -> None:
    result = runner.invoke(app, ["compare", str(tmp_results), str(tmp_results)])
    assert result.exit_code == 0, result.output
    assert "regression" not in result.stdout


def test_compare_slower_case_exits_1_and_names_it(tmp_path: Path, sample_run: RunResult) -> None:
    base = tmp_path / "base.json"
    dump_results(sample_run, base)
    slow = make_case("beta", 2e-3, scale=1.5)
    cand_run = replace(sample_run, cases=(sample_run.cases[0], slow, sample_run.cases[2]))
    cand = tmp_path / "cand.json"
    dump_results(cand_run, cand)
    # a steady runner: little noise between jobs (the CPU default, 0.10, would call 1.5x "inconclusive")
    result = runner.invoke(app, ["compare", str(base), str(cand), "--format", "json", "--job-noise", "0.02"])
    assert result.exit_code == 1
    rows = json.loads(result.stdout)["rows"]
    assert [r["case_id"] for r in rows if r["verdict"] == "regression"] == [slow.id]


def test_compare_exit_zero_reports_only(tmp_path: Path, sample_run: RunResult) -> None:
    base = tmp_path / "base.json"
    dump_results(sample_run, base)
    cand = tmp_path / "cand.json"
    dump_results(make_run([make_case("alpha", 1e-3, scale=2.0)]), cand)
    assert runner.invoke(app, ["compare", str(base), str(cand), "--job-noise", "0.02"]).exit_code == 1
    assert runner.invoke(app, ["compare", str(base), str(cand), "--job-noise", "0.02", "--exit-zero"]).exit_code == 0


def test_new_cases_do_not_fail_missing_ones_do_unless_allowed(tmp_path: Path) -> None:
    """Nothing compared is never a pass: a baseline case with no candidate fails (`missing`, exit 1) unless
    --allow-missing; a new case is listed and passes. (Before, both passed.)"""
    base = tmp_path / "base.json"
    cand = tmp_path / "cand.json"
    dump_results(make_run([make_case("alpha", 1e-3), make_case("gamma", 1e-3)]), base)
    dump_results(make_run([make_case("beta", 1e-3), make_case("gamma", 1e-3, seed=1)]), cand)
    result = runner.invoke(app, ["compare", str(base), str(cand), "--format", "json"])
    assert result.exit_code == 1
    verdicts = {r["case_id"]: r["verdict"] for r in json.loads(result.stdout)["rows"]}
    assert verdicts["t.alpha[n=8]@cpu"] == "missing" and verdicts["t.beta[n=8]@cpu"] == "new"
    allowed = runner.invoke(app, ["compare", str(base), str(cand), "--format", "json", "--allow-missing"])
    assert allowed.exit_code == 0, allowed.output


def test_no_case_in_common_exits_2_naming_an_id_of_each(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    cand = tmp_path / "cand.json"
    dump_results(make_run([make_case("alpha", 1e-3)]), base)
    dump_results(make_run([make_case("beta", 1e-3)]), cand)
    result = runner.invoke(app, ["compare", str(base), str(cand)])
    assert result.exit_code == 2
    assert "t.alpha[n=8]@cpu" in result.stderr and "t.beta[n=8]@cpu" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("content", ["{", "", "[1, 2]", '{"schema": "perfci.results", "schema_version": 7}'])
def test_bad_input_exits_2_with_one_line(tmp_path: Path, tmp_results: Path, content: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    result = runner.invoke(app, ["compare", str(tmp_results), str(bad)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert result.stderr.strip().startswith("error:")
    assert len(result.stderr.strip().splitlines()) <= 2  # the error line and, where useful, a hint


def test_missing_file_exits_2(tmp_results: Path) -> None:
    result = runner.invoke(app, ["compare", str(tmp_results), "/nonexistent/x.json"])
    assert result.exit_code == 2
    assert "not found" in result.stderr


def test_run_with_missing_path_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", str(tmp_path / "nope.py")])
    assert result.exit_code == 2
    assert "no such workload file" in result.stderr


@pytest.mark.parametrize("content", [None, "{", '{"schema": "perfci.results", "schema_version": 7}'])
def test_run_checks_its_baseline_before_measuring(tmp_path: Path, content: str | None) -> None:
    """A missing or unreadable --baseline is reported at once (exit 2), not after a whole run: nothing is
    measured, no output folder is made."""
    base = tmp_path / "base.json"
    if content is not None:
        base.write_text(content)
    workload = tmp_path / "w.py"
    workload.write_text("import perfci\n\n@perfci.workload()\ndef w(ctx):\n    return lambda: None\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", str(workload), "--baseline", str(base), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {base}")
    assert not out.exists()


def test_run_json_with_a_baseline_is_one_document(tmp_path: Path) -> None:
    """`run --format json --baseline B` printed the results, then the comparison: two documents, not JSON. Now
    one: the results document with the comparison under `comparison`."""
    workload = tmp_path / "w.py"
    workload.write_text("import perfci\n\n@perfci.workload()\ndef w(ctx):\n    return lambda: sum(range(50))\n")
    fast = ["--rounds", "2", "--round-time", "0.01"]
    assert runner.invoke(app, ["run", str(workload), *fast, "--out", str(tmp_path / "a")]).exit_code == 0
    base = tmp_path / "a" / "results.json"
    result = runner.invoke(app, ["run", str(workload), *fast, "--out", str(tmp_path / "b"), "--baseline", str(base),
                                 "--format", "json", "--exit-zero"])  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "perfci.results" and [c["id"] for c in doc["cases"]] == ["w.w@cpu"]
    assert doc["comparison"]["schema"] == "perfci.comparison"
    assert {r["case_id"] for r in doc["comparison"]["rows"]} == {"w.w@cpu"}


def test_list_builtin_default_suite() -> None:
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0
    assert "default.matmul[n=384,dtype=float32]@cpu" in result.stdout


@pytest.mark.parametrize("command", [["list"], ["run", "--out", "never"]])
def test_a_pytest_style_k_expression_is_explained(command: list[str]) -> None:
    """`-k "matmul or softmax"` is one substring to perfci and matches nothing: said, with what works."""
    result = runner.invoke(app, [*command, "-k", "matmul or softmax"])
    assert result.exit_code == 2, result.output  # `list` of nothing too, as `run` (it was exit 0: a user audit)
    assert "matches no case" in result.stderr and "several: -k matmul -k softmax" in result.stderr
    worked = runner.invoke(app, ["list", "-k", "matmul", "-k", "softmax"])  # what the hint says does work
    assert "default.matmul[n=384,dtype=float32]@cpu" in worked.stdout and "default.softmax" in worked.stdout
    assert not Path("never").exists()


def test_env_json_says_no_gpu_plainly() -> None:
    result = runner.invoke(app, ["env", "--format", "json"])
    assert result.exit_code == 0
    fp = json.loads(result.stdout)
    assert fp["cpu_logical_cores"] >= 1 and fp["python"].startswith("3.")
    if not fp["gpus"]:
        assert fp["gpu_note"]


def test_env_shows_the_runner_class_in_effect(monkeypatch: pytest.MonkeyPatch) -> None:
    """`perfci env` showed the class derived from the machine when $PERFCI_RUNNER set another one (a user audit):
    the baseline file is named by the one in effect."""
    monkeypatch.setenv("PERFCI_RUNNER", "lab-box")
    doc = json.loads(runner.invoke(app, ["env", "--format", "json"]).stdout)
    assert doc["runner"] == "lab-box" and doc["runner_derived"] != "lab-box"
    text = runner.invoke(app, ["env"]).stdout
    assert text.startswith(f"runner class: lab-box (set by $PERFCI_RUNNER or the configuration; this machine's own: "
                           f"{doc['runner_derived']})")  # fmt: skip


def test_parse_size() -> None:
    assert parse_size("1GiB") == 2**30
    assert parse_size("512 MB") == 512 * 10**6
    assert parse_size("1000") == 1000
    with pytest.raises(UsageError):
        parse_size("lots")


def test_memory_limit_between_64_mib_and_1_eib() -> None:
    """Fuzzing: `PERFCI_MEMORY_LIMIT=0` (or `1B`) made every case fail as out of memory; 10^23 GiB was taken."""
    from perfci.api.settings import Settings
    from perfci.api.sizes import memory_limit_bytes

    assert memory_limit_bytes("8GiB") == 8 * 2**30
    for bad in ("0", "1B", "0GiB", "99999999999999999999999GiB"):
        with pytest.raises(UsageError, match="is not between 64 MiB and 1 EiB"):
            memory_limit_bytes(bad)
    # the error names where the value came from (it said "cannot read 'lots'" with a --memory-limit hint)
    with pytest.raises(UsageError, match=r"^\$PERFCI_MEMORY_LIMIT: cannot read 'lots' as a memory size") as refused:
        Settings({"PERFCI_MEMORY_LIMIT": "lots"}).memory_limit(None)
    assert refused.value.hint == "e.g. PERFCI_MEMORY_LIMIT=8GiB"
    with pytest.raises(UsageError, match=r"^--memory-limit: '10' is not between"):
        Settings({"PERFCI_MEMORY_LIMIT": "8GiB"}).memory_limit("10")
    assert Settings({"PERFCI_MEMORY_LIMIT": "1GiB"}).memory_limit(None) == 2**30


def test_skipped_case_is_reported_and_does_not_fail_the_gate(tmp_path: Path, sample_run: RunResult) -> None:
    from perfci.format.model import CaseError, CaseStatus

    base = tmp_path / "base.json"
    dump_results(sample_run, base)
    skipped = replace(
        sample_run.cases[1],
        status=CaseStatus.SKIPPED,
        rounds=(),
        metrics=(),
        errors=(CaseError("skipped", "triton is not installed", 0),),
    )
    cand = tmp_path / "cand.json"
    dump_results(replace(sample_run, cases=(sample_run.cases[0], skipped, sample_run.cases[2])), cand)
    result = runner.invoke(app, ["compare", str(base), str(cand), "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {r["case_id"]: r for r in json.loads(result.stdout)["rows"] if r["metric"] == "latency.median"}
    assert rows[skipped.id]["verdict"] == "missing"
    assert "triton is not installed" in rows[skipped.id]["note"]


def test_an_ascii_only_stdout_gets_question_marks_not_a_traceback(tmp_path: Path) -> None:
    """`µs` under LC_ALL=C without UTF-8 mode ended a comparison that passed with a traceback and exit 1."""
    import subprocess
    import sys

    from tests.conftest import make_case, make_run

    base, head = make_run([make_case("a", 20e-6)]), make_run([make_case("a", 20e-6, seed=1)], run_id="head")
    dump_results(base, tmp_path / "b.json")
    dump_results(head, tmp_path / "h.json")
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "perfci", "compare", "b.json", "h.json", "--exit-zero"],
        cwd=tmp_path, env=env, capture_output=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode("ascii", "replace")
    assert b"Traceback" not in proc.stderr and b"?s" in proc.stdout  # "20 ?s": the micro sign replaced
