"""examples/custom-kernel runs as its README says, from a fresh copy: list, run, baseline update, run again."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.cli import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "custom-kernel"
pytestmark = pytest.mark.integration


def perfci_run(cwd: Path) -> subprocess.CompletedProcess[str]:
    # --rounds 1 keeps the test short; the README's plain `perfci run` uses the configured 3 rounds
    env = {k: v for k, v in os.environ.items() if k != "MYKERNELS_SLOW"}
    cmd = [sys.executable, "-m", "perfci", "run", "--rounds", "1"]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


def test_example_project_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "custom-kernel"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".perfci", "__pycache__", "*.json"))
    monkeypatch.chdir(project)
    listed = CliRunner().invoke(app, ["list"])
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.split() == [
        "bench_rmsnorm.rmsnorm_fp32[rows=2048,hidden=1024]@cpu",
        "bench_rmsnorm.rmsnorm_fp32[rows=2048,hidden=2048]@cpu",
    ]

    first = perfci_run(project)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "no baseline" in first.stderr

    update = CliRunner().invoke(app, ["baseline", "update", "--reason", "first baseline"])
    assert update.exit_code == 0, update.output
    assert (project / "baselines" / "example-cpu.json").is_file()

    second = perfci_run(project)
    assert second.returncode in (0, 1), second.stdout + second.stderr  # compared: no error, no crash
    assert "bench_rmsnorm.rmsnorm_fp32[rows=2048,hidden=2048]@cpu" in second.stdout
    assert "latency.median" in second.stdout  # a comparison table, not just results
