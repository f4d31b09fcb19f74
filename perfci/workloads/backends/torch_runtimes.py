"""PyTorch runtimes: eager, torch.compile, autocast (bf16/fp16) and dynamic int8 quantisation.

torch is imported inside the methods, so that listing cases never pays for it.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass
from typing import Any

from perfci.workloads.api import WorkloadContext
from perfci.workloads.backends.base import BF16, FP16, INT8, Prepared, fp32_tolerance, stored_bytes


def _forward(model: Any, x: Any, autocast: Any = None) -> Any:
    import torch

    def call() -> Any:
        with torch.inference_mode():
            if autocast is None:
                return model(x)
            with torch.autocast(device_type=autocast[0], dtype=autocast[1]):
                return model(x)

    return call


@dataclass(frozen=True)
class Eager:
    name: str = "eager"

    def unsupported(self, device: str) -> str | None:
        return None

    def prepare(self, model: Any, example: Any, ctx: WorkloadContext) -> Prepared:
        call = _forward(model, example)
        return Prepared(call, call, stored_bytes(model.state_dict()), fp32_tolerance(ctx.device))


@dataclass(frozen=True)
class Compile:
    """`torch.compile` (inductor, default mode). The set-up compiles with one call, so the first, slow
    compilation is not timed; it still counts against the case time-out."""

    name: str = "compile"
    mode: str = "default"

    def unsupported(self, device: str) -> str | None:
        return None

    def prepare(self, model: Any, example: Any, ctx: WorkloadContext) -> Prepared:
        import torch

        compiled = torch.compile(model, mode=self.mode)
        call = _forward(compiled, example)
        call()
        ctx.notes["compile.mode"] = self.mode
        return Prepared(call, call, stored_bytes(model.state_dict()), fp32_tolerance(ctx.device))


@dataclass(frozen=True)
class Autocast:
    """fp32 weights, matmuls and convolutions in `dtype` under `torch.autocast`."""

    name: str
    dtype: str  # bfloat16 | float16

    def unsupported(self, device: str) -> str | None:
        if self.dtype == "float16" and not device.startswith("cuda"):
            return "fp16 autocast is a GPU runtime (on CPU it is emulated)"
        return None

    def prepare(self, model: Any, example: Any, ctx: WorkloadContext) -> Prepared:
        import torch

        dtype = getattr(torch, self.dtype)
        call = _forward(model, example, (ctx.device.split(":")[0], dtype))
        tolerance = BF16 if self.dtype == "bfloat16" else FP16
        return Prepared(call, call, stored_bytes(model.state_dict()), tolerance)


@dataclass(frozen=True)
class TorchInt8:
    """Dynamic int8 quantisation of the Linear layers (`torch.ao.quantization.quantize_dynamic`): int8 weights,
    activations quantised per call. Convolutions stay fp32. CPU only."""

    name: str = "torch-int8"

    def unsupported(self, device: str) -> str | None:
        return None if device == "cpu" else "torch dynamic int8 quantisation runs on CPU only"

    def prepare(self, model: Any, example: Any, ctx: WorkloadContext) -> Prepared:
        import torch

        quantize = torch.ao.quantization.quantize_dynamic
        with warnings.catch_warnings():  # torch 2.13 warns that quantized tensor types are deprecated
            warnings.simplefilter("ignore", UserWarning)
            quantized = quantize(copy.deepcopy(model), {torch.nn.Linear}, dtype=torch.qint8)  # type: ignore[no-untyped-call]
        ctx.notes["quantized.engine"] = str(torch.backends.quantized.engine)
        call = _forward(quantized, example)
        return Prepared(call, call, stored_bytes(quantized.state_dict()), INT8)
