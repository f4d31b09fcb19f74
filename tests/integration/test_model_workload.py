"""`perfci.model_workload`: a torch module in one line, measured in each variant and batch size, each variant's
output checked against eager fp32 with its tolerance and worst difference in the results file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from perfci.errors import WorkloadDefinitionError
from perfci.metrics.registry import ACCURACY_MAX_ABS, ACCURACY_REL_L2, ACCURACY_TOP1

WORKLOADS = """
import perfci
import torch
from perfci.workloads.checks import Tolerance


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))


def cnn():
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1))


mlps = perfci.model_workload(
    mlp, inputs=lambda batch: torch.randn(batch, 32), variants=["eager", "inference", "bf16", "fp16"], batch=[1, 4]
)
convs = perfci.model_workload(
    cnn, inputs=lambda batch: (torch.randn(batch, 3, 16, 16),), variants=["channels-last"], batch=[2]
)
strict = perfci.model_workload(
    mlp,
    inputs=lambda batch: {"input": torch.randn(batch, 32)},
    variants=["bf16"],
    name="strict",
    tolerances={"bf16": Tolerance(max_rel_l2=1e-9)},
)
"""


def test_each_variant_is_a_case_checked_against_eager(tmp_path: Path) -> None:
    (tmp_path / "models.py").write_text(WORKLOADS)
    proc = subprocess.run(
        [sys.executable, "-m", "perfci", "run", "models.py", "--rounds", "2", "--round-time", "0.02", "--out", "out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr  # a case failed (its check): exit 3
    cases = {c["id"]: c for c in json.loads((tmp_path / "out" / "results.json").read_text())["cases"]}
    ok = [i for i, c in cases.items() if c["status"] == "ok"]
    assert sorted(ok) == sorted(
        [f"models.mlp[variant={v},batch={b}]@cpu" for v in ("eager", "inference", "bf16") for b in (1, 4)]
        + ["models.cnn[variant=channels-last,batch=2]@cpu"]
    )  # fp16 autocast is for GPUs: no CPU case
    bf16 = cases["models.mlp[variant=bf16,batch=4]@cpu"]["rounds"][0]["telemetry"]["notes"]["accuracy"]
    assert bf16["reference"] == "eager fp32" and bf16["tolerance"]["max_rel_l2"] == 0.05
    assert 0 < bf16["rel_l2"] < 0.05
    layout = cases["models.cnn[variant=channels-last,batch=2]@cpu"]["rounds"][0]["telemetry"]["notes"]["accuracy"]
    assert layout["rel_l2"] < 1e-4
    # every checked case has the accuracy metrics, the tolerances beside them, and the same figures in each round
    # (a fresh worker process each, on seeded inputs: an A/A is exact)
    for case_id in ok:
        case = cases[case_id]
        metrics = {m["name"]: m["value"] for m in case["metrics"]}
        assert {ACCURACY_REL_L2, ACCURACY_MAX_ABS} <= set(metrics), case_id
        assert (ACCURACY_TOP1 in metrics) == ("mlp" in case_id)  # the mlp's one 2-d output is logits
        notes = [r["telemetry"]["notes"] for r in case["rounds"]]
        assert set(notes[0]["tolerances"]) == {ACCURACY_REL_L2, ACCURACY_MAX_ABS}
        assert len({json.dumps(n["accuracy"], sort_keys=True) for n in notes}) == 1
        assert metrics[ACCURACY_REL_L2] == notes[0]["accuracy"]["rel_l2"]
    assert (
        cases["models.mlp[variant=bf16,batch=4]@cpu"]["rounds"][0]["telemetry"]["notes"]["tolerances"][ACCURACY_REL_L2]
        == 0.05
    )
    (failed,) = [c for c in cases.values() if c["status"] == "error"]
    assert failed["id"] == "models.strict[variant=bf16,batch=1]@cpu"
    assert failed["errors"][0]["kind"] == "check" and "bf16 output vs eager" in failed["errors"][0]["message"]


def test_an_unknown_variant_is_refused() -> None:
    import perfci

    with pytest.raises(WorkloadDefinitionError, match="unknown model variant 'fp8'"):
        perfci.model_workload(lambda: None, inputs=lambda b: None, variants=["fp8"])


def test_a_module_given_for_its_factory_is_refused_with_the_fix() -> None:
    import torch

    import perfci

    net = torch.nn.Linear(4, 2)
    with pytest.raises(WorkloadDefinitionError, match=r"not a module \(Linear\)") as refused:
        perfci.model_workload(net, inputs=lambda b: torch.ones(b, 4))
    assert "lambda: MyNet()" in (refused.value.hint or "")
    built = perfci.model_workload(lambda: torch.nn.Linear(4, 2), inputs=lambda b: torch.ones(b, 4), batch=[1, 2])
    assert len(built.grid()) == 6  # a factory of the same module is taken: 3 default variants x 2 batches


def test_the_warm_up_runs_the_model_in_eager_and_the_case_s_variant_at_a_cpu_batch_no_case_uses() -> None:
    """The preload of a model workload: the case's own model, called in eager and the case's own variant, each once
    per process and device kind, never in the workload's other variants (one that hangs or runs out of memory
    fails its own cases only; `tests/integration/test_model_variant_isolation.py`); a compile case's in eager;
    channels-last after eager: its conversion stays; not fp16 on a CPU, where no case runs it; at the smallest
    batch size the grid leaves free on a CPU and at each of the grid's on CUDA.
    `tests/integration/test_case_memory.py` measures what it is for."""
    import torch

    import perfci
    from perfci.workloads.torch_model import TorchModel, off_grid_batch

    assert off_grid_batch([1, 8]) == 2 and off_grid_batch([2, 3]) == 1 and off_grid_batch([1, 2, 3]) == 4
    built: list[int] = []

    def inputs(batch: int) -> torch.Tensor:
        built.append(batch)
        return torch.ones(batch, 4)

    wl = perfci.model_workload(lambda: torch.nn.Linear(4, 2), inputs=inputs, variants=["eager", "bf16"], batch=[8, 1])
    assert wl.preload is not None
    wl.preload("cpu", {"variant": "eager", "batch": 8})
    assert built == [2]  # eager alone, at batch 2: bf16 is no case of this one's
    wl.preload("cpu", {"variant": "bf16", "batch": 1})
    assert built == [2, 2]  # bf16 now, eager being done
    wl.preload("cpu", {"variant": "bf16", "batch": 8})
    wl.preload("cpu", {"variant": "eager", "batch": 1})
    assert built == [2, 2]  # once per process and variant
    compiled = perfci.model_workload(lambda: torch.nn.Linear(4, 2), inputs=inputs, variants=["compile"], batch=[3])
    built.clear()
    assert compiled.preload is not None
    compiled.preload("cpu", {"variant": "compile", "batch": 3})
    assert built == [1]  # eager only

    rehearsed: list[tuple[str, list[str], list[int]]] = []
    spec = TorchModel(lambda: torch.nn.Linear(4, 2), inputs, {})
    spec.rehearse = lambda device, variants, batches: rehearsed.append((device, list(variants), list(batches)))  # type: ignore[method-assign]
    spec.warm("cuda:0", {"variant": "channels-last"}, [8, 1, 8])
    spec.warm("cuda:0", {"variant": "fp16"}, [8, 1, 8])
    spec.warm("cuda:0", {"variant": "compile"}, [8, 1, 8])  # eager's, done
    spec.warm("cuda:0", {"variant": "fp16"}, [8, 1, 8])
    spec.warm("cpu", {"variant": "fp16"}, [8, 1, 8])  # fp16 is no CPU case's
    spec.warm("cpu", {"variant": "bf16"}, [8, 1, 8])
    assert rehearsed == [
        ("cuda:0", ["eager", "channels-last"], [1, 8]),
        ("cuda:0", ["fp16"], [1, 8]),
        ("cpu", ["eager"], [2]),
        ("cpu", ["bf16"], [2]),
    ]


def test_a_rehearsal_that_fails_is_left_to_the_case() -> None:
    import torch

    from perfci.workloads.torch_model import TorchModel

    def broken(batch: int) -> torch.Tensor:
        raise ValueError("inputs need a batch of 8")

    TorchModel(lambda: torch.nn.Linear(4, 2), broken, {}).rehearse("cpu", ["eager"], [2])  # no exception
