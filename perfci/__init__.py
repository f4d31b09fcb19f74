"""perfci: continuous performance-regression gate for ML kernels and models."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perfci.workloads.api import Workload, WorkloadContext, workload
    from perfci.workloads.onnx_file import onnx_workload
    from perfci.workloads.torch_model import model_workload

__version__ = "0.1.0"
__all__ = ["Workload", "WorkloadContext", "__version__", "model_workload", "onnx_workload", "workload"]


def __getattr__(name: str) -> Any:
    """The workload API on first use (`import perfci` in a workload file, then `@perfci.workload`): importing
    it imports numpy, which commands such as `perfci compare` do not need (docs/scale.md)."""
    if name in ("Workload", "WorkloadContext", "workload"):
        from perfci.workloads import api

        return getattr(api, name)
    if name == "onnx_workload":
        from perfci.workloads.onnx_file import onnx_workload

        return onnx_workload
    if name == "model_workload":
        from perfci.workloads.torch_model import model_workload

        return model_workload
    raise AttributeError(f"module 'perfci' has no attribute {name!r}")
