"""examples/custom-kernel runs as its README says, from a fresh copy: list, run, baseline update, run again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from perfci.cli import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "custom-kernel"
pytestmark = pytest.mark.integration


def perfci_run() -> Result:
    # in process (the workers are real subprocesses); --rounds 2 (the least) keeps the test short: the README's plain
    # `perfci run` uses the configured 3 rounds
    return CliRunner().invoke(app, ["run", "--rounds", "2"])


def test_example_project_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "custom-kernel"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".perfci", "__pycache__", "*.json"))
    monkeypatch.chdir(project)
    monkeypatch.delenv("MYKERNELS_SLOW", raising=False)
    listed = CliRunner().invoke(app, ["list"])
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.split() == [
        "bench_rmsnorm.rmsnorm_fp32[rows=2048,hidden=1024]@cpu",
        "bench_rmsnorm.rmsnorm_fp32[rows=2048,hidden=2048]@cpu",
    ]

    first = perfci_run()
    assert first.exit_code == 0, first.output
    assert "no baseline" in first.stderr

    update = CliRunner().invoke(app, ["baseline", "update", "--reason", "first baseline"])
    assert update.exit_code == 0, update.output
    assert (project / "baselines" / "example-cpu.json").is_file()

    second = perfci_run()
    assert second.exit_code in (0, 1), second.output  # compared: no error, no crash
    assert "bench_rmsnorm.rmsnorm_fp32[rows=2048,hidden=2048]@cpu" in second.stdout
    assert "latency.median" in second.stdout  # a comparison table, not just results
