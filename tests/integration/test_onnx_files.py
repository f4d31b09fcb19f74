"""`perfci run model.onnx` in a subprocess, on a model exported by torch.onnx.export with its default arguments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from perfci.metrics.registry import ACCURACY_MAX_ABS, ACCURACY_REL_L2

pytestmark = pytest.mark.integration


def _run_onnx(folder: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """`perfci run model.onnx` in `folder`, 2 short rounds, its own cache folder."""
    env = {**os.environ, "PERFCI_CACHE_DIR": str(folder / "cache")}
    command = ["run", "model.onnx", "--out", str(out), "--rounds", "2", "--round-time", "0.05"]
    return subprocess.run(
        [sys.executable, "-m", "perfci", *command], cwd=folder, env=env, capture_output=True, text=True, timeout=300
    )


def test_run_an_exported_onnx_file_measures_every_variant_and_records_accuracy(tmp_path: Path) -> None:
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU()).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(2, 16),), str(tmp_path / "model.onnx"))  # the defaults, on purpose
    out = tmp_path / "out"
    proc = _run_onnx(tmp_path, out)
    assert proc.returncode == 0, proc.stderr
    cases = {c["params"]["variant"]: c for c in json.loads((out / "results.json").read_text())["cases"]}
    assert sorted(cases) == ["fp16", "fp32", "int8-dynamic", "int8-static"]
    for variant, case in cases.items():
        assert case["status"] == "ok", case
        notes = case["rounds"][0]["telemetry"]["notes"]
        assert notes["onnx.inputs"] == {"input": [2, 16]}  # the exported (fixed) batch
        if variant == "fp32":
            assert "accuracy" not in notes
            continue
        accuracy = notes["accuracy"]
        assert accuracy["reference"] == "fp32"
        assert accuracy["max_abs_diff"] >= 0 and accuracy["max_rel_diff"] >= 0
        assert 0 <= accuracy["rel_l2"] <= accuracy["tolerance"]["max_rel_l2"]
        metrics = {m["name"]: m["value"] for m in case["metrics"]}
        assert metrics[ACCURACY_REL_L2] == accuracy["rel_l2"] and metrics[ACCURACY_MAX_ABS] >= 0
        assert notes["tolerances"][ACCURACY_REL_L2] == accuracy["tolerance"]["max_rel_l2"]
    assert any("fp32 plus casts" in s for s in cases["fp16"]["rounds"][0]["telemetry"]["notes"]["explain"])
    assert sorted(p.name for p in (tmp_path / "cache" / "onnx").glob("*/*.onnx"))[0] == "fp16.onnx"


def test_int8_variants_far_past_their_tolerance_fail_the_run(tmp_path: Path) -> None:
    """One huge weight sets the per-tensor int8 scale of its layer, so every other weight of it rounds to 0; the
    next layer ignores the huge one's unit, so fp32's output comes from the weights int8 lost (relative L2 error
    near 1, against a tolerance of 0.05 or 0.1)."""
    import torch

    torch.manual_seed(0)
    first, second = torch.nn.Linear(16, 32), torch.nn.Linear(32, 8)
    with torch.no_grad():
        first.weight.mul_(0.01)
        first.weight[0, 0] = 1e4
        second.weight[:, 0] = 0.0
    model = torch.nn.Sequential(first, torch.nn.ReLU(), second).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(2, 16),), str(tmp_path / "model.onnx"))
    out = tmp_path / "out"
    proc = _run_onnx(tmp_path, out)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    cases = {c["params"]["variant"]: c for c in json.loads((out / "results.json").read_text())["cases"]}
    for variant in ("int8-dynamic", "int8-static"):
        (error,) = cases[variant]["errors"][:1]
        assert cases[variant]["status"] == "error" and "relative L2 error" in error["message"], error
        assert "exceeds relative L2 error <=" in error["message"]
    assert cases["fp32"]["status"] == "ok"
