"""A model workload's variants fail alone: the warm-up before a case's memory window (`TorchModel.warm`) calls the
model in eager and the case's own variant only, so a variant that hangs or runs out of memory is an error of its
own cases, the eager reference and the other variants are still measured, and a variant the run deselected with
`-k` is never called at all. Before, the warm-up called the model in every variant of the workload: one hanging
variant timed out every case of the model, even with that variant deselected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_run_subprocess import perfci

pytestmark = [pytest.mark.integration]

# Each bad variant leaves a marker (the process id) next to this file when the model is called in it, before it
# misbehaves: the markers tell which runs called which variant. MemoryError stands for running out of memory
# without allocating any.
MODELS = """
import os
import time
from pathlib import Path

import perfci
import torch

HERE = Path(__file__).parent


def _mark(variant):
    with open(HERE / f"called-{variant}", "a") as f:
        f.write(f"{os.getpid()}\\n")


class Fragile(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(32, 8)

    def forward(self, x):
        if torch.is_inference_mode_enabled():
            _mark("inference")
            time.sleep(3600)
        y = self.lin(x)
        if y.dtype == torch.bfloat16:
            _mark("bf16")
            raise MemoryError("the bf16 variant ran out of memory")
        return y


fragile = perfci.model_workload(
    Fragile,
    inputs=lambda batch: torch.randn(batch, 32),
    variants=["eager", "inference", "bf16"],
    batch=[1],
    devices=["cpu"],
    name="fragile",
)
"""

CASE = "models.fragile[variant={},batch=1]@cpu"


def _run(tmp_path: Path, *args: str) -> tuple[int, dict[str, dict]]:  # type: ignore[type-arg]
    # short, as the hanging variant's case waits it out, yet long enough for a worker to start on a busy machine
    settings = ["--out", "out", "--rounds", "2", "--round-time", "0.02", "--timeout", "15"]
    proc = perfci("run", "models.py", *settings, *args, cwd=tmp_path)
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    return proc.returncode, {c["id"]: c for c in doc["cases"]}


def test_a_hanging_and_a_failing_variant_fail_only_their_own_cases(tmp_path: Path) -> None:
    (tmp_path / "models.py").write_text(MODELS)
    rc, cases = _run(tmp_path)
    assert rc == 3, rc  # cases failed: exit 3
    assert set(cases) == {CASE.format(v) for v in ("eager", "inference", "bf16")}
    eager = cases[CASE.format("eager")]
    assert eager["status"] == "ok" and len(eager["rounds"]) == 2, eager.get("errors")
    hang = cases[CASE.format("inference")]
    assert hang["status"] == "error" and {e["kind"] for e in hang["errors"]} == {"timeout"}, hang["errors"]
    raised = cases[CASE.format("bf16")]
    assert raised["status"] == "error", raised["status"]
    assert {e["kind"] for e in raised["errors"]} != {"timeout"}, raised["errors"]
    assert "ran out of memory" in json.dumps(raised["errors"]), raised["errors"]
    # the markers work: each bad variant was called (its own cases' set-ups call it), so their absence tells
    assert (tmp_path / "called-inference").exists() and (tmp_path / "called-bf16").exists()


def test_a_deselected_variant_is_never_called(tmp_path: Path) -> None:
    (tmp_path / "models.py").write_text(MODELS)
    rc, cases = _run(tmp_path, "-k", "eager")
    assert rc == 0, {i: c.get("errors") for i, c in cases.items()}
    assert list(cases) == [CASE.format("eager")] and cases[CASE.format("eager")]["status"] == "ok"
    assert not (tmp_path / "called-inference").exists() and not (tmp_path / "called-bf16").exists()
