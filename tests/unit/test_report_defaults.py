"""`perfci report A B` decides as `perfci compare A B` does (the options table's threshold, the configured thresholds),
and writes beside the candidate, not over the baseline run's own report (CliRunner, synthetic files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.api.report import load_inputs
from perfci.api.settings import Settings
from perfci.cli import app
from perfci.cli.app import project_settings
from perfci.config import Config
from perfci.format.schema import dump_results
from tests.conftest import make_case, make_run

runner = CliRunner()


@pytest.fixture
def pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Two files of one run (paired: no cross-job noise), with tight noise: case `a` 4% slower, `b` 1% slower."""
    monkeypatch.chdir(tmp_path)  # the project: no configuration unless a test writes one
    base = make_run([make_case("a", 1e-3, noise=0.002), make_case("b", 1e-3, noise=0.002)], run_id="one-run")
    head = make_run(
        [make_case("a", 1e-3, noise=0.002, scale=1.04), make_case("b", 1e-3, noise=0.002, scale=1.01)],
        run_id="one-run",
    )
    paths = tmp_path / "base" / "results.json", tmp_path / "head" / "results.json"
    dump_results(base, paths[0])
    dump_results(head, paths[1])
    (tmp_path / "base" / "report.html").write_text("the baseline run's own report")
    return paths


def verdict_line(stderr: str) -> str:
    return next(line for line in stderr.splitlines() if line.startswith(("PASS", "FAIL", "ERROR")))


def compare_verdicts(base: Path, head: Path, *flags: str) -> dict[tuple[str, str], str]:
    result = runner.invoke(app, ["compare", str(base), str(head), "--format", "json", *flags])
    assert result.exit_code in (0, 1), result.output
    return {(r["case_id"], r["metric"]): r["verdict"] for r in json.loads(result.stdout)["rows"]}


def report_verdicts(base: Path, head: Path, threshold: float | None = None) -> dict[tuple[str, str], str]:
    comparison = load_inputs([base, head], threshold, project_settings(None)).comparison
    assert comparison is not None
    return {(r.case_id, r.metric): r.verdict.value for r in comparison.rows}


def test_report_and_compare_give_the_same_verdicts(pair: tuple[Path, Path], tmp_path: Path) -> None:
    base, head = pair
    compared = runner.invoke(app, ["compare", str(base), str(head), "--out", str(tmp_path / "cmp")])
    reported = runner.invoke(app, ["report", str(base), str(head)])
    assert compared.exit_code == 1 and reported.exit_code == 0, reported.output  # a report never gates
    # a CPU case 4% slower: past the 3% CPU threshold of the options table (the old default of report, 5%, said
    # `slower`)
    assert (
        verdict_line(compared.stderr)
        == verdict_line(reported.stderr)
        == "FAIL: 1 regression, 3 unchanged (4 rows of 2 cases)"
    )
    verdicts = compare_verdicts(base, head)
    assert verdicts[("t.a[n=8]@cpu", "latency.median")] == "regression"
    assert report_verdicts(base, head) == verdicts
    # the same rows make the same Markdown summary
    assert (head.parent / "summary.md").read_text() == (tmp_path / "cmp" / "summary.md").read_text()


def test_report_takes_the_threshold_flag_and_the_configuration_as_compare_does(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    base, head = pair
    flagged = compare_verdicts(base, head, "--threshold", "5%")
    assert flagged[("t.a[n=8]@cpu", "latency.median")] == "slower"
    assert report_verdicts(base, head, 0.05) == flagged
    reported = runner.invoke(app, ["report", str(base), str(head), "--threshold", "5%", "-q"])
    assert verdict_line(reported.stderr) == "PASS: 1 slower, 3 unchanged (4 rows of 2 cases)", reported.output
    (tmp_path / "perfci.toml").write_text('[thresholds]\n"t.a*" = { latency = 0.05 }\n')
    configured = compare_verdicts(base, head)
    assert configured == flagged and report_verdicts(base, head) == configured
    (tmp_path / "perfci.toml").write_text('threshold = "0.5%"\n')
    tight = compare_verdicts(base, head)
    assert tight[("t.b[n=8]@cpu", "latency.median")] == "regression" and report_verdicts(base, head) == tight
    reported = runner.invoke(app, ["report", str(base), str(head), "-q"])
    assert verdict_line(reported.stderr) == "FAIL: 2 regressions, 2 unchanged (4 rows of 2 cases)"
    other = tmp_path / "elsewhere.toml"
    other.write_text('threshold = "5%"\n')
    reported = runner.invoke(app, ["report", str(base), str(head), "-q", "--config", str(other)])
    assert verdict_line(reported.stderr) == "PASS: 1 slower, 3 unchanged (4 rows of 2 cases)"


def test_the_library_call_defaults_to_the_options_table(pair: tuple[Path, Path]) -> None:
    base, head = pair
    plain = load_inputs([base, head]).comparison  # no settings: the built-in thresholds, as compare's defaults
    assert plain is not None
    assert {(r.case_id, r.metric): r.verdict.value for r in plain.rows} == compare_verdicts(base, head)
    configured = load_inputs([base, head], settings=Settings({}, Config(threshold=0.05))).comparison
    assert configured is not None
    assert {r.verdict.value for r in configured.rows if r.case_id.startswith("t.a")} == {"slower", "unchanged"}


def test_report_help_shows_the_options_table_default() -> None:
    text = " ".join(runner.invoke(app, ["report", "--help"], terminal_width=200).output.split())
    assert "[default: 0.05]" not in text
    assert "[default: the configured `thresholds`, else per metric and device (3% CPU, 1% GPU)]" in text
    assert "[default: the comparison file's folder, else the candidate's" in text


def test_two_results_files_are_reported_beside_the_candidate(pair: tuple[Path, Path]) -> None:
    base, head = pair
    result = runner.invoke(app, ["report", str(base), str(head), "-q"])
    assert result.exit_code == 0, result.output
    assert (base.parent / "report.html").read_text() == "the baseline run's own report"  # left as it was
    assert not (base.parent / "summary.md").exists()
    assert "FAIL: 1 regression" in (head.parent / "summary.md").read_text()
    assert "t.a[n=8]@cpu" in (head.parent / "report.html").read_text()
    assert f"report: {head.parent / 'report.html'}" in " ".join(result.stderr.split())  # as wrapped at 80 columns


def test_a_comparison_file_is_reported_beside_itself(pair: tuple[Path, Path], tmp_path: Path) -> None:
    base, head = pair
    assert runner.invoke(app, ["compare", str(base), str(head), "--out", str(tmp_path / "cmp")]).exit_code == 1
    (tmp_path / "cmp" / "report.html").unlink()
    result = runner.invoke(app, ["report", str(tmp_path / "cmp" / "comparison.json"), str(base), str(head), "-q"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "cmp" / "report.html").exists() and not (head.parent / "report.html").exists()
    assert (base.parent / "report.html").read_text() == "the baseline run's own report"


def test_one_results_file_is_still_reported_beside_itself(pair: tuple[Path, Path]) -> None:
    base, _ = pair
    assert runner.invoke(app, ["report", str(base), "-q"]).exit_code == 0
    assert "t.a[n=8]@cpu" in (base.parent / "report.html").read_text()
