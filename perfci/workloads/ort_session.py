"""The one ONNX Runtime session builder: execution providers for a device, and a session with perfci's options
(sequential execution, one inter-op thread, a chosen intra-op thread count and graph optimisation level).

Both ways a model reaches ONNX Runtime use it: a torch model exported by the `ort` runtime (backends/ort.py) and an
`.onnx` file's variants (onnx_file.py, onnx_variants.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

GRAPH_LEVELS = ("disabled", "basic", "extended", "all")


def providers_for(device: str, available: list[str], tensorrt: bool = True) -> list[Any] | str:
    """The execution providers for `device` (CPU always; TensorRT where allowed and present, then CUDA, for a CUDA
    device where this onnxruntime build has them), or the reason there are none."""
    if not device.startswith("cuda"):
        return ["CPUExecutionProvider"]
    if "CUDAExecutionProvider" not in available:
        return f"onnxruntime has no CUDAExecutionProvider here (available: {', '.join(available)})"
    index = int(device.split(":", 1)[1]) if ":" in device else 0
    chosen: list[Any] = [("CUDAExecutionProvider", {"device_id": index}), "CPUExecutionProvider"]
    if tensorrt and "TensorrtExecutionProvider" in available:
        chosen.insert(0, ("TensorrtExecutionProvider", {"device_id": index}))
    return chosen


def open_session(
    path: Path, providers: list[Any], threads: int, graph_opt: str = "all", optimized_to: Path | None = None
) -> Any:
    """An `InferenceSession` of the model at `path` with perfci's options."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = {
        "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[graph_opt]
    options.log_severity_level = 3
    if optimized_to is not None:
        options.optimized_model_filepath = str(optimized_to)
    return ort.InferenceSession(str(path), options, providers=providers)
