"""`perfci compare` and `perfci baseline` through typer's CliRunner: exit codes 0/1/2/3 exactly as the CLI contract
says, the files written with --out, JUnit XML read by a real consumer (junitparser)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import junitparser
import pytest
from typer.testing import CliRunner

from perfci.api.compare import unpaired_remedy, unsettled_note
from perfci.cli import app
from perfci.format.model import CaseError, CaseStatus, RunResult
from perfci.format.schema import dump_results
from tests.conftest import make_case, make_run
from tests.formats import load_comparison

runner = CliRunner()
STEADY = ["--job-noise", "0.01"]


def _write(tmp_path: Path, name: str, run: RunResult) -> Path:
    path = tmp_path / name
    dump_results(run, path)
    return path


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    base = make_run([make_case("a", 1e-3), make_case("b", 2e-3), make_case("c", 5e-4)])
    slow = replace(base, cases=(base.cases[0], make_case("b", 2e-3, seed=1, scale=1.4), base.cases[2]))
    failed_case = replace(base.cases[2], status=CaseStatus.ERROR, metrics=(), errors=(CaseError("crash", "boom"),))
    failed = replace(base, cases=(base.cases[0], base.cases[1], failed_case))
    return (
        _write(tmp_path, "base.json", base),
        _write(tmp_path, "same.json", replace(base, run_id="same")),
        _write(tmp_path, "slow.json", slow),
        _write(tmp_path, "failed.json", failed),
    )


def test_exit_codes(pair: tuple[Path, Path, Path, Path], tmp_path: Path) -> None:
    base, same, slow, failed = (str(p) for p in pair)
    assert runner.invoke(app, ["compare", base, same, *STEADY]).exit_code == 0
    assert runner.invoke(app, ["compare", base, slow, *STEADY]).exit_code == 1
    assert runner.invoke(app, ["compare", base, failed, *STEADY]).exit_code == 3
    assert runner.invoke(app, ["compare", base, slow, *STEADY, "--exit-zero"]).exit_code == 0
    assert runner.invoke(app, ["compare", base, str(tmp_path / "nope.json")]).exit_code == 2
    assert runner.invoke(app, ["compare", base, same, "--family", "sometimes"]).exit_code == 2
    bad_expected = tmp_path / "e.toml"
    bad_expected.write_text("version = 2\n")
    assert runner.invoke(app, ["compare", base, slow, "--expected", str(bad_expected)]).exit_code == 2


def test_hardware_mismatch_refuses_unless_allowed(tmp_path: Path) -> None:
    base = make_run([make_case("a", 1e-3)])
    other = replace(base, fingerprint={**base.fingerprint, "cpu_model": "another cpu"})
    a, b = _write(tmp_path, "a.json", base), _write(tmp_path, "b.json", other)
    refused = runner.invoke(app, ["compare", str(a), str(b)])
    assert refused.exit_code == 2 and "different hardware" in refused.stderr
    allowed = runner.invoke(app, ["compare", str(a), str(b), "--allow-mismatch"])
    assert allowed.exit_code == 0 and "hardware differs" in allowed.stderr


def test_out_folder_json_and_junit(pair: tuple[Path, Path, Path, Path], tmp_path: Path) -> None:
    base, _, slow, _ = pair
    out = tmp_path / "out"
    result = runner.invoke(app, ["compare", str(base), str(slow), *STEADY, "--out", str(out), "--format", "json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["schema"] == "perfci.comparison" and doc["verdict"]["gate"] == "fail"
    saved = load_comparison(out / "comparison.json")
    assert [r.case_id for r in saved.failing] == ["t.b[n=8]@cpu"]
    assert (out / "report.html").exists()

    xml = junitparser.JUnitXml.fromfile(str(out / "junit.xml"))
    cases = {c.name: c for suite in xml for c in suite}
    assert set(cases) == {"t.a[n=8]@cpu", "t.b[n=8]@cpu", "t.c[n=8]@cpu"}
    assert not cases["t.a[n=8]@cpu"].result
    failure = cases["t.b[n=8]@cpu"].result[0]
    assert isinstance(failure, junitparser.Failure) and "latency.median: regression" in failure.message
    suite = next(iter(xml))
    assert suite.tests == 3 and suite.failures == 1 and suite.errors == 0


def test_junit_error_and_skipped(pair: tuple[Path, Path, Path, Path], tmp_path: Path) -> None:
    base, _, _, failed = pair
    path = tmp_path / "j.xml"
    assert runner.invoke(app, ["compare", str(base), str(failed), *STEADY, "--junit", str(path)]).exit_code == 3
    cases = {c.name: c for suite in junitparser.JUnitXml.fromfile(str(path)) for c in suite}
    assert isinstance(cases["t.c[n=8]@cpu"].result[0], junitparser.Error)
    noisy = tmp_path / "noisy.json"
    dump_results(make_run([make_case("a", 1e-3, scale=1.2, noise=0.3)]), noisy)
    # b and c are not in the noisy run: `missing`, which fails the gate unless allowed
    args = ["compare", str(base), str(noisy), "--junit", str(path)]
    assert runner.invoke(app, args).exit_code == 1
    # what fails the gate fails in JUnit too (missing was `<skipped>`: a CI reading only JUnit showed green)
    xml = junitparser.JUnitXml.fromfile(str(path))
    cases = {c.name: c for suite in xml for c in suite}
    missing = cases["t.b[n=8]@cpu"].result[0]
    assert isinstance(missing, junitparser.Failure) and missing.type == "missing"
    assert xml.failures == 2 and xml.skipped == 1
    assert runner.invoke(app, [*args, "--allow-missing"]).exit_code == 0
    cases = {c.name: c for suite in junitparser.JUnitXml.fromfile(str(path)) for c in suite}
    assert isinstance(cases["t.a[n=8]@cpu"].result[0], junitparser.Skipped)  # inconclusive
    assert isinstance(cases["t.b[n=8]@cpu"].result[0], junitparser.Skipped)  # missing, allowed


def test_expected_change_passes_with_a_note(pair: tuple[Path, Path, Path, Path], tmp_path: Path) -> None:
    base, _, slow, _ = pair
    expected = tmp_path / "perfci-expected.toml"
    expected.write_text('version = 1\n[[change]]\ncase = "t.b*"\nmax_change = 0.6\nreason = "accuracy fix"\n')
    result = runner.invoke(app, ["compare", str(base), str(slow), *STEADY, "--expected", str(expected)])
    assert result.exit_code == 0, result.output
    assert "expected" in result.stderr


def test_baseline_update_show_and_compare_against_it(
    pair: tuple[Path, Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, _, slow, _ = pair
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PERFCI_RUNNER", "ci-cpu")
    assert runner.invoke(app, ["baseline", "update", str(base)]).exit_code == 2  # no reason
    done = runner.invoke(app, ["baseline", "update", str(base), "--reason", "first baseline"])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "baselines" / "ci-cpu.json").exists()
    shown = runner.invoke(app, ["baseline", "show", "--format", "json"])
    info = json.loads(shown.stdout)
    assert info["runner"] == "ci-cpu" and info["reason"] == "first baseline" and len(info["cases"]) == 3
    assert runner.invoke(app, ["compare", str(slow), *STEADY]).exit_code == 1  # against baselines/ci-cpu.json
    assert runner.invoke(app, ["baseline", "show", "--runner", "nobody"]).exit_code == 2


def test_catch_option_is_recorded_and_checked(pair: tuple[Path, Path, Path, Path], tmp_path: Path) -> None:
    base, same, _, _ = pair
    result = runner.invoke(app, ["compare", str(base), str(same), *STEADY, "--catch", "0.6", "--format", "json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["settings"]["catch"] == 0.6
    default = runner.invoke(app, ["compare", str(base), str(same), *STEADY, "--format", "json"])
    assert json.loads(default.stdout)["settings"]["catch"] == 0.75
    refused = runner.invoke(app, ["compare", str(base), str(same), "--catch", "0.3"])
    assert refused.exit_code == 2 and "--catch" in refused.output


def test_the_remedy_names_the_pytest_files_of_unsettled_tests() -> None:
    assert unpaired_remedy(["wl.add@cpu"]).endswith("`perfci ab BASE_REV`.")
    mixed = unpaired_remedy(["wl.add@cpu", "bench/test_b.py::test_x[10]@cpu", "bench/test_b.py::test_y@cpu"])
    assert mixed.endswith("`perfci ab BASE_REV --pytest bench/test_b.py`.")
    many = unpaired_remedy([f"t/test_{i}.py::test@cpu" for i in range(5)])
    assert "--pytest t/test_0.py --pytest t/test_1.py --pytest t/test_2.py ...`" in many
    assert unsettled_note([], mixed) is None
    assert (unsettled_note(["a@cpu"], mixed) or "").startswith("note: 1 case(s) not settled")


def test_unsettled_cases_get_one_hint_naming_the_remedy(pair: tuple[Path, Path, Path, Path]) -> None:
    """With the default CPU job noise, identical results from two jobs cannot exclude a 5% change: the verdicts
    stay as they are and one note on stderr points to `perfci ab`. With a steady runner's noise it is settled."""
    base, same = str(pair[0]), str(pair[1])
    noisy = runner.invoke(app, ["compare", base, same])
    assert noisy.exit_code == 0
    assert "note: 3 case(s) not settled at the practical threshold" in noisy.stderr
    assert "`perfci ab BASE_REV`" in noisy.stderr
    assert "note: 3 case(s) not settled" in runner.invoke(app, ["compare", base, same, *STEADY]).stderr
    steady = runner.invoke(app, ["compare", base, same, "--job-noise", "0"])
    assert steady.exit_code == 0 and "not settled" not in steady.stderr


def test_a_metric_asked_for_that_no_case_has_is_said(pair: tuple[Path, Path, Path, Path]) -> None:
    """An audit: `--metric latency.median --metric device.time` on CPU runs passed on latency alone without a word
    about device time."""
    base, same = str(pair[0]), str(pair[1])
    args = ["compare", base, same, *STEADY, "--format", "json"]
    both = runner.invoke(app, [*args, "--metric", "latency.median", "--metric", "device.time"])
    assert both.exit_code == 0
    assert (
        "--metric device.time: compared in no case (no case of both runs has it)" in json.loads(both.stdout)["warnings"]
    )
    alone = runner.invoke(app, [*args, "--metric", "latency.median"])
    assert not [w for w in json.loads(alone.stdout)["warnings"] if w.startswith("--metric")]
