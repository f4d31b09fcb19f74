"""The built-in suites through the real CLI, in subprocesses with real workers (small subsets, tiny budgets)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def perfci(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perfci", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_onnx_suite_measures_ort_and_torch_side_by_side_with_checks(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["run", "--suite", "onnx", "-k", "onnx.cnn[batch=1,", "--device", "cpu", "--rounds", "2"]
    proc = perfci(*args, "--round-time", "0.05", "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((out / "results.json").read_text())
    cases = {c["params"]["runtime"]: c for c in doc["cases"]}
    assert set(cases) == {"eager", "torch-int8", "ort", "ort-int8"}  # the same model, differing only by runtime
    for runtime, case in cases.items():
        assert case["status"] == "ok", (runtime, case.get("errors"))
        assert {k for k in case["params"]} == {"batch", "runtime"}
        assert len(case["rounds"]) == 2
        assert case["flops"] == cases["eager"]["flops"]  # same declared FLOPs: FLOP/s compares runtimes
    assert cases["ort-int8"]["bytes"] < cases["ort"]["bytes"]
    html = (out / "report.html").read_text()
    assert all(f"onnx.cnn[batch=1,runtime={r}]@cpu" in html for r in cases)


def test_cuda_cases_fail_clearly_without_a_gpu(tmp_path: Path) -> None:
    # listing them everywhere is covered in tests/unit/test_config_cli.py; here a real worker runs one
    from perfci.engine.runner import Runner, RunSettings
    from perfci.profilers.nvml import gpu_inventory
    from perfci.workloads.discovery import builtin_source, cases_from_sources

    if gpu_inventory().gpus:
        pytest.skip("this runner has a GPU: the no-GPU path is not reachable here")
    specs = [s for s in cases_from_sources([builtin_source("kernels")]) if s.workload == "kernels.triton_add"]
    run = Runner(RunSettings(rounds=1, peaks_cache=None), tmp_path).run(specs)
    (case,) = run.cases
    assert case.id == "kernels.triton_add[mib=1024]@cuda" and case.status.value == "error"
    assert "torch.cuda.is_available() is False" in case.errors[0].message
