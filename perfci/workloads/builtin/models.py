"""The `models` suite: an MLP, a transformer encoder block and a small CNN (random weights, no downloads)
through PyTorch runtimes, side by side by the `runtime` parameter, over a batch-size sweep.

Runtimes: `eager`, `autocast-bf16`, `torch-int8` (dynamic int8 Linear, CPU only), `autocast-fp16` (CUDA only),
`compile` (torch.compile; on CUDA always, on CPU only when PERFCI_CPU_COMPILE=1: its first compilation takes
tens of seconds per case and round). Each output is checked against fp32 eager before timing.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import perfci
from perfci.workloads.api import WorkloadContext
from perfci.workloads.backends import unsupported
from perfci.workloads.model_case import model_workload

RUNTIMES = ["eager", "compile", "autocast-bf16", "autocast-fp16", "torch-int8"]
DEVICES = ["cpu", "cuda"]


def _skip(device: str, runtime: str, **_: object) -> str | None:
    if runtime == "compile" and device == "cpu" and os.environ.get("PERFCI_CPU_COMPILE") != "1":
        return "torch.compile on CPU is opt-in (set PERFCI_CPU_COMPILE=1): its first compilation is slow"
    return unsupported(runtime, device)


@perfci.workload(params={"batch": [1, 32], "runtime": RUNTIMES}, devices=DEVICES, skip=_skip, tags=["model", "mlp"])
def mlp(ctx: WorkloadContext, batch: int, runtime: str) -> Callable[[], object]:
    return model_workload(ctx, "mlp", batch, runtime)


@perfci.workload(
    params={"batch": [1, 8], "runtime": RUNTIMES}, devices=DEVICES, skip=_skip, tags=["model", "transformer"]
)
def encoder(ctx: WorkloadContext, batch: int, runtime: str) -> Callable[[], object]:
    return model_workload(ctx, "encoder", batch, runtime)


@perfci.workload(params={"batch": [1, 16], "runtime": RUNTIMES}, devices=DEVICES, skip=_skip, tags=["model", "cnn"])
def cnn(ctx: WorkloadContext, batch: int, runtime: str) -> Callable[[], object]:
    return model_workload(ctx, "cnn", batch, runtime)
