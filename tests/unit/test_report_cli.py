"""`perfci report`: renders results, pairs of results and saved comparisons again (CliRunner, synthetic files)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.cli import app
from perfci.format.comparison import dump_comparison
from perfci.format.schema import dump_results
from perfci.reports.verdicts import headline
from tests.formats import load_comparison
from tests.report_fixtures import decided_comparison

runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("report")
    base, cand, comparison = decided_comparison(8)
    paths = {"base": folder / "base.json", "cand": folder / "cand.json", "cmp": folder / "comparison.json"}
    dump_results(base, paths["base"])
    dump_results(cand, paths["cand"])
    dump_comparison(comparison, paths["cmp"])
    return paths


@pytest.fixture(scope="module")
def verdict(files: dict[str, Path]) -> str:
    """The verdict line perfci's decision rule gives for the pair (these tests check rendering, not the rule)."""
    return headline(load_comparison(files["cmp"]))


def test_report_of_one_results_file(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["report", str(files["cand"]), "--out", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert "no baseline to compare with" in html and "kernels.k[n=7]@cpu" in html


def test_report_of_two_results_files_compares_them(files: dict[str, Path], verdict: str, tmp_path: Path) -> None:
    out, md = tmp_path / "r.html", tmp_path / "summary.md"
    args = ["report", str(files["base"]), str(files["cand"]), "-o", str(out), "--markdown", str(md)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output  # a report never gates
    assert verdict in out.read_text()
    assert md.read_text().startswith(f"### perfci: {verdict}")
    assert "`r.html`" in md.read_text()


def test_report_of_a_saved_comparison_with_and_without_results(
    files: dict[str, Path], verdict: str, tmp_path: Path
) -> None:
    alone, full = tmp_path / "alone.html", tmp_path / "full.html"
    assert runner.invoke(app, ["report", str(files["cmp"]), "-o", str(alone)]).exit_code == 0
    args = ["report", str(files["cmp"]), str(files["base"]), str(files["cand"]), "-o", str(full)]
    assert runner.invoke(app, args).exit_code == 0
    assert "main" in alone.read_text() and verdict in alone.read_text()
    assert '"dist":[]' in alone.read_text()  # no raw data without the results files
    assert '"dist":[{' in full.read_text()


def test_a_results_file_of_another_run_beside_a_comparison_is_refused(files: dict[str, Path], tmp_path: Path) -> None:
    """Results files of other runs given with a comparison were charted beside its verdicts (a user audit)."""
    from dataclasses import replace

    from perfci.format.schema import load_results

    other = tmp_path / "other.json"
    dump_results(replace(load_results(files["cand"]), run_id="some-other-run"), other)
    result = runner.invoke(
        app, ["report", str(files["cmp"]), str(files["base"]), str(other), "-o", str(tmp_path / "r.html")]
    )
    assert result.exit_code == 2, result.output
    assert "results of run 'some-other-run' are not one of the runs this comparison compared" in result.stderr
    assert not (tmp_path / "r.html").exists()


def test_markdown_to_stdout(files: dict[str, Path], verdict: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", str(files["cmp"]), "-o", str(tmp_path / "r.html"), "--markdown", "-"])
    assert result.exit_code == 0
    assert result.stdout.startswith(f"### perfci: {verdict}")


def test_bad_inputs_exit_2(files: dict[str, Path], tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text('{"schema": "something else"}')
    for args in ([str(tmp_path / "missing.json")], [str(junk)], [str(files["cmp"])] * 2):
        result = runner.invoke(app, ["report", *args, "-o", str(tmp_path / "r.html")])
        assert result.exit_code == 2, (args, result.output)


def test_report_writes_both_files_next_to_its_input(tmp_path: Path) -> None:
    from tests.conftest import make_case, make_run

    folder = tmp_path / "run"
    dump_results(make_run([make_case("a", 1e-3)]), folder / "results.json")
    res = CliRunner().invoke(app, ["report", str(folder / "results.json"), "--quiet"])
    assert res.exit_code == 0, res.output
    assert (folder / "report.html").exists() and (folder / "summary.md").read_text().strip()
    res = CliRunner().invoke(app, ["report", str(folder / "results.json"), "--out", str(tmp_path / "elsewhere")])
    assert res.exit_code == 0 and (tmp_path / "elsewhere" / "report.html").exists()
    assert (tmp_path / "elsewhere" / "summary.md").exists()


def test_a_folder_given_for_the_summary_is_refused_before_anything_is_written(
    files: dict[str, Path], tmp_path: Path
) -> None:
    """The HTML report was written, then the summary failed on the folder (exit 2 with half the outputs)."""
    folder = tmp_path / "rep"
    folder.mkdir()
    result = runner.invoke(app, ["report", str(files["cand"]), "-o", str(folder / "r.html"), "--markdown", str(folder)])
    assert result.exit_code == 2 and "is a folder; give the name of the file to write" in result.stderr
    assert list(folder.iterdir()) == []


def test_a_named_html_report_takes_its_summary_under_its_own_name(files: dict[str, Path], tmp_path: Path) -> None:
    """`-o docs/perf.html` wrote its summary over `docs/summary.md`, a file the user had not asked perfci to write:
    the summary is `docs/perf.md`; a summary.md already there is left as it was."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "summary.md").write_text("the team's own notes\n")
    result = runner.invoke(app, ["report", str(files["cand"]), "-o", str(docs / "perf.html")])
    assert result.exit_code == 0, result.output
    assert (docs / "summary.md").read_text() == "the team's own notes\n"
    assert "`perf.html`" in (docs / "perf.md").read_text()
    assert f"summary: {docs / 'perf.md'}" in " ".join(result.stderr.split())
