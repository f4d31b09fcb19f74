"""The runtime plug-in point: how a torch model is turned into a callable to time on one runtime."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from perfci.workloads.api import WorkloadContext
from perfci.workloads.checks import Tolerance

FP32_CPU = Tolerance(rtol=1e-4, atol=1e-4)  # element-wise: same math, different kernels / summation order
FP32_CUDA = Tolerance(max_rel_l2=5e-3)  # cuDNN convolutions use TF32 by default, on either side
BF16 = Tolerance(max_rel_l2=2e-2)
FP16 = Tolerance(max_rel_l2=5e-3)
INT8 = Tolerance(max_rel_l2=5e-2)  # dynamic int8 with random (untrained) weights; measured 0.5-2.5%


def fp32_tolerance(device: str) -> Tolerance:
    return FP32_CUDA if device.startswith("cuda") else FP32_CPU


@dataclass(frozen=True)
class Prepared:
    """A model made ready on one runtime."""

    call: Callable[[], object]  # what is timed: one forward pass
    output: Callable[[], object]  # one forward pass's output as a tensor or array, for the correctness check
    weight_bytes: float  # parameters as this runtime stores them (int8 weights count 1 byte each)
    tolerance: Tolerance  # how close `output()` must be to the fp32 eager output


class Runtime(Protocol):
    """A way to run a torch model. `unsupported` is static (used when the grid is listed); `prepare` may call
    `ctx.skip(reason)` for what only the runner can tell, and records facts in `ctx.notes`."""

    @property
    def name(self) -> str: ...

    def unsupported(self, device: str) -> str | None: ...

    def prepare(self, model: Any, example: Any, ctx: WorkloadContext) -> Prepared: ...


def stored_bytes(state: Any) -> float:
    """Bytes of every tensor in a state dict (or nested tuples/lists of tensors, as in packed quantised
    weights), at the element size they are stored with."""
    if hasattr(state, "numel") and hasattr(state, "element_size"):
        return float(state.numel() * state.element_size())
    if isinstance(state, dict):
        return sum(stored_bytes(v) for v in state.values())
    if isinstance(state, list | tuple):
        return sum(stored_bytes(v) for v in state)
    return 0.0
