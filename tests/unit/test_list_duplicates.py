"""`perfci list` with a file named twice (`perf perf/wl.py`) lists each case once, as `perfci run` measures it
once (api/select.py); one id from two different files is still an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.api.select import select_cases
from perfci.api.settings import Settings
from perfci.cli import app

runner = CliRunner()

WORKLOAD = """\
import perfci

@perfci.workload(params={"n": [1, 2]})
def twice(ctx, n):
    return lambda: sum(range(n))
"""
IDS = ["listed_twice.twice[n=1]@cpu", "listed_twice.twice[n=2]@cpu"]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "perf").mkdir()
    (tmp_path / "perf" / "listed_twice.py").write_text(WORKLOAD)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "paths", [["perf", "perf/listed_twice.py"], ["perf/listed_twice.py", "perf"], ["perf", "perf"]]
)
def test_list_shows_each_case_once(project: Path, paths: list[str]) -> None:
    result = runner.invoke(app, ["list", *paths])
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == IDS
    rows = json.loads(runner.invoke(app, ["list", *paths, "--format", "json"]).stdout)
    assert [r["id"] for r in rows] == IDS


def test_the_cases_a_run_measures_are_each_once(project: Path) -> None:
    choice = select_cases(Settings(), [Path("perf"), Path("perf/listed_twice.py")])
    assert [s.id for s in choice.cases] == IDS


def test_one_id_from_two_files_is_still_refused(project: Path) -> None:
    (project / "other").mkdir()
    (project / "other" / "listed_twice.py").write_text(WORKLOAD)
    result = runner.invoke(app, ["list", "perf", "other"])
    assert result.exit_code == 2
    assert "case listed_twice.twice[n=1]@cpu is defined twice" in " ".join(result.stderr.split())
