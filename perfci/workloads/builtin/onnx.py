"""The `onnx` suite: the `models` suite's models through ONNX Runtime and PyTorch, side by side by `runtime`.

- `eager`, `torch-int8`: the PyTorch paths (the reference and its int8 twin);
- `ort`: exported with torch.onnx.export, fp32, all graph optimisations, the runner's execution provider;
- `ort-int8`: the same ONNX model with dynamic int8 quantisation (CPU only).

Every ORT output is checked against the torch fp32 eager output before timing: element-wise within
|a - e| <= 1e-4 + 1e-4 |e| for fp32 on CPU (relative L2 <= 5e-3 on CUDA), relative L2 <= 5e-2 for int8.
`graph_opt` sweeps ONNX Runtime's graph optimisation levels on the fp32 models. ORT uses as many intra-op
threads as torch does in the same worker (`--threads`), recorded in the case notes.
"""

from __future__ import annotations

from collections.abc import Callable

import perfci
from perfci.workloads.api import WorkloadContext
from perfci.workloads.backends import unsupported
from perfci.workloads.model_case import model_workload

RUNTIMES = ["eager", "torch-int8", "ort", "ort-int8"]
DEVICES = ["cpu", "cuda"]


def _skip(device: str, runtime: str, **_: object) -> str | None:
    return unsupported(runtime, device)


@perfci.workload(params={"batch": [1, 32], "runtime": RUNTIMES}, devices=DEVICES, skip=_skip, tags=["onnx", "mlp"])
def mlp(ctx: WorkloadContext, batch: int, runtime: str) -> Callable[[], object]:
    return model_workload(ctx, "mlp", batch, runtime)


@perfci.workload(
    params={"batch": [1, 8], "runtime": RUNTIMES}, devices=DEVICES, skip=_skip, tags=["onnx", "transformer"]
)
def encoder(ctx: WorkloadContext, batch: int, runtime: str) -> Callable[[], object]:
    return model_workload(ctx, "encoder", batch, runtime)


@perfci.workload(params={"batch": [1, 16], "runtime": RUNTIMES}, devices=DEVICES, skip=_skip, tags=["onnx", "cnn"])
def cnn(ctx: WorkloadContext, batch: int, runtime: str) -> Callable[[], object]:
    return model_workload(ctx, "cnn", batch, runtime)


@perfci.workload(
    params={"model": ["encoder", "cnn"], "level": ["disabled", "basic", "all"]}, devices=DEVICES, tags=["onnx"]
)
def graph_opt(ctx: WorkloadContext, model: str, level: str) -> Callable[[], object]:
    """ONNX Runtime fp32 at batch 8, by graph optimisation level."""
    return model_workload(ctx, model, 8, "ort", graph_opt=level)
