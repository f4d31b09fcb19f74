"""ONNX Runtime: export a torch model with `torch.onnx.export`, optionally quantise it to dynamic int8, and run
it with the execution providers this runner has.

- Export: the TorchScript-based exporter (`dynamo=False`, opset 17; ~0.1 s for these models with torch 2.13),
  falling back to the dynamo exporter (~2.5 s) if the legacy one fails or is gone. Done in a temporary folder.
- Threads: `intra_op_num_threads` = torch's intra-op thread count in this worker (so torch and ORT cases
  get the same CPU), one inter-op thread, sequential execution; recorded in `ctx.notes`.
- Providers: CPU cases use `CPUExecutionProvider` only; CUDA cases need `CUDAExecutionProvider`
  (onnxruntime-gpu) and bind input and output on the device (I/O binding), so no host copies are timed.
- int8: `onnxruntime.quantization.quantize_dynamic`, int8 weights with `reduce_range=True` (7-bit: without it
  the u8 x s8 kernels of CPUs without VNNI saturate, measured 10-16% relative error vs 1.6% with it).
"""

from __future__ import annotations

import copy
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfci.workloads import surprises
from perfci.workloads.api import WorkloadContext
from perfci.workloads.backends.base import INT8, Prepared, fp32_tolerance
from perfci.workloads.ort_session import GRAPH_LEVELS, open_session, providers_for


def export_onnx(model: Any, example: Any, path: Path, ctx: WorkloadContext) -> None:
    import torch

    cpu_model, cpu_example = copy.deepcopy(model).cpu(), example.cpu()
    kwargs: dict[str, Any] = {"input_names": ["x"], "output_names": ["y"], "opset_version": 17}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(cpu_model, (cpu_example,), str(path), dynamo=False, **kwargs)
            ctx.notes["onnx.exporter"] = "torchscript"
        except Exception as legacy_error:
            try:
                torch.onnx.export(cpu_model, (cpu_example,), str(path), dynamo=True, **kwargs)
            except Exception:
                raise legacy_error from None
            ctx.notes["onnx.exporter"] = "dynamo"


def initializer_bytes(path: Path) -> float:
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path)).graph
    return float(sum(numpy_helper.to_array(t).nbytes for t in graph.initializer))


def quantize_int8(path: Path) -> Path:
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    out = path.with_suffix(".int8.onnx")
    logging.disable(logging.WARNING)  # the quantizer logs a pre-processing advice on the root logger each time
    try:
        quantize_dynamic(path, out, weight_type=QuantType.QInt8, reduce_range=True)
    finally:
        logging.disable(logging.NOTSET)
    return out


@dataclass(frozen=True)
class OnnxRuntime:
    name: str = "ort"
    int8: bool = False
    graph_opt: str = "all"  # disabled | basic | extended | all

    def unsupported(self, device: str) -> str | None:
        if self.graph_opt not in GRAPH_LEVELS:
            return f"unknown ONNX Runtime graph optimisation level {self.graph_opt!r} (use {', '.join(GRAPH_LEVELS)})"
        if self.int8 and device != "cpu":
            return "ONNX Runtime dynamic int8 kernels are CPU kernels"
        if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
            return f"no ONNX Runtime execution provider for device {device!r} here"
        return None

    def prepare(self, model: Any, example: Any, ctx: WorkloadContext) -> Prepared:
        import onnxruntime as ort
        import torch

        providers = providers_for(ctx.device, ort.get_available_providers(), tensorrt=False)
        if isinstance(providers, str):
            ctx.skip(providers)
        threads = torch.get_num_threads()
        with tempfile.TemporaryDirectory(prefix="perfci-onnx-") as tmp:
            path = Path(tmp) / "model.onnx"
            export_onnx(model, example, path, ctx)
            if self.int8:
                path = quantize_int8(path)
            weights = initializer_bytes(path)
            session = open_session(path, providers, threads, self.graph_opt)
        ctx.notes.update(
            {
                "ort.version": ort.__version__,
                "ort.providers": session.get_providers(),
                "ort.intra_op_num_threads": threads,
                "ort.graph_optimization_level": self.graph_opt,
                "ort.int8": self.int8,
            }
        )
        fallback = surprises.provider_fallback_note(providers, session.get_providers())
        if fallback:
            surprises.explain(ctx.notes, fallback)
        call, output = self._bind(session, example, ctx)
        return Prepared(call, output, weights, INT8 if self.int8 else fp32_tolerance(ctx.device))

    def _bind(self, session: Any, example: Any, ctx: WorkloadContext) -> tuple[Any, Any]:
        in_name, out_name = session.get_inputs()[0].name, session.get_outputs()[0].name
        if not ctx.device.startswith("cuda"):
            feed = {in_name: example.contiguous().numpy()}
            return (lambda: session.run(None, feed)), (lambda: session.run(None, feed)[0])
        import numpy as np

        x = example.contiguous()
        binding = session.io_binding()
        binding.bind_input(
            name=in_name,
            device_type="cuda",
            device_id=x.device.index or 0,
            element_type=np.float32,
            shape=tuple(x.shape),
            buffer_ptr=x.data_ptr(),
        )
        binding.bind_output(out_name, "cuda", x.device.index or 0)

        def output() -> Any:
            session.run_with_iobinding(binding)
            return binding.copy_outputs_to_cpu()[0]

        return (lambda: session.run_with_iobinding(binding)), output
