"""Errors that name what was given: the `-k` pattern that matched nothing, and the command a pytest-benchmark file
needs."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from perfci.api.select import nothing_selected
from perfci.cli import app

DATA = Path(__file__).parents[1] / "data" / "workloads"


def test_a_pattern_that_matches_nothing_is_named() -> None:
    assert nothing_selected(["nosuchcase"], None, None) == "-k 'nosuchcase' matches no case"
    assert nothing_selected(None, None, None) == "no workloads found"
    res = CliRunner().invoke(app, ["run", str(DATA / "tiny.py"), "-k", "nosuchcase"])
    assert res.exit_code == 2 and "-k 'nosuchcase' matches no case" in res.output


def test_a_pytest_benchmark_file_points_to_perfci_import(tmp_path: Path) -> None:
    path = tmp_path / "pb.json"
    path.write_text(json.dumps({"machine_info": {}, "commit_info": {}, "benchmarks": [], "version": "5.1.0"}))
    for args in (["compare", str(path), str(path)], ["report", str(path)]):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 2 and "perfci import pytest-benchmark" in res.output, res.output
