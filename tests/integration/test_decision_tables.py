"""The decision table a team chooses by, from `perfci run` in a subprocess: a model workload's variants and batch
sizes with time per item and accuracy, its best configuration named in summary.md, the terminal and the report;
an ONNX file's variants with their accuracy."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

WORKLOAD = """
import perfci
import torch


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))


model = perfci.model_workload(
    mlp, inputs=lambda batch: torch.randn(batch, 64), variants=["eager", "bf16"], batch=[1, 8], devices=["cpu"]
)
"""


def perfci_run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PERFCI_CACHE_DIR": str(cwd / "cache"), "COLUMNS": "80"}
    return subprocess.run(
        [sys.executable, "-m", "perfci", "run", *args, "--out", "out", "--rounds", "2", "--round-time", "0.05"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_model_workload_gets_a_decision_table_with_its_best_configuration(tmp_path: Path) -> None:
    (tmp_path / "wl.py").write_text(WORKLOAD)
    proc = perfci_run(tmp_path, "wl.py")
    assert proc.returncode == 0, proc.stderr
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "#### Decision table: `wl.mlp@cpu`" in summary
    assert "| configuration | batch | per call | per item | items/s |" in summary
    assert "accuracy (rel. L2)" in summary and "(≤ 0.05)" in summary  # bf16's error with its tolerance
    best = [line for line in summary.splitlines() if line.startswith("**best configuration by time per item")]
    assert len(best) == 1 and "batch" in best[0] and "per item" in best[0], summary
    assert "decision table: wl.mlp@cpu" in proc.stdout
    assert "best configuration by time per item" in proc.stdout
    report = (tmp_path / "out" / "report.html").read_text()
    assert 'id="decisions"' in report and "best configuration" in report


def test_an_onnx_file_table_shows_each_variants_accuracy(tmp_path: Path) -> None:
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU()).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(2, 16),), str(tmp_path / "model.onnx"))
    proc = perfci_run(tmp_path, "model.onnx")
    assert proc.returncode == 0, proc.stderr
    summary = (tmp_path / "out" / "summary.md").read_text()
    table = summary[summary.index("#### Decision table") :]
    rows = {line.split("|")[1].strip(" `*"): line for line in table.splitlines() if line.startswith("| `")}
    assert sorted(rows) == ["fp16", "fp32", "int8-dynamic", "int8-static"], table
    assert "reference" in rows["fp32"]
    for variant in ("fp16", "int8-dynamic", "int8-static"):
        assert "(≤ " in rows[variant], rows[variant]  # its relative L2 error with its tolerance
    assert "random inputs" in table  # int8-static's calibration is explained
