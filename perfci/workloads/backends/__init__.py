"""Runtimes a model workload can run on, by name: the values of the built-in suites' `runtime` parameter.

Adding one is one module with a class that follows `base.Runtime` and one line in `RUNTIMES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from perfci.workloads.backends.base import Prepared, Runtime
from perfci.workloads.backends.ort import OnnxRuntime
from perfci.workloads.backends.torch_runtimes import Autocast, Compile, Eager, TorchInt8

RUNTIMES: Mapping[str, Runtime] = MappingProxyType(
    {
        "eager": Eager(),
        "compile": Compile(),
        "autocast-bf16": Autocast("autocast-bf16", "bfloat16"),
        "autocast-fp16": Autocast("autocast-fp16", "float16"),
        "torch-int8": TorchInt8(),
        "ort": OnnxRuntime(),
        "ort-int8": OnnxRuntime("ort-int8", int8=True),
    }
)


def runtime(name: str, graph_opt: str | None = None) -> Runtime:
    """The runtime called `name`; for ONNX Runtime ones, `graph_opt` overrides the graph optimisation level."""
    try:
        found = RUNTIMES[name]
    except KeyError:
        raise ValueError(f"unknown runtime {name!r} (known: {', '.join(RUNTIMES)})") from None
    if graph_opt is not None and isinstance(found, OnnxRuntime):
        return OnnxRuntime(found.name, found.int8, graph_opt)
    return found


def unsupported(name: str, device: str) -> str | None:
    """Why runtime `name` cannot run on `device` (None: it can); for skip predicates."""
    return runtime(name).unsupported(device)


__all__ = ["RUNTIMES", "Prepared", "Runtime", "runtime", "unsupported"]
