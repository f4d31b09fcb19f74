"""Set-up shared by the model workloads of the built-in suites: one zoo model, one batch size, one runtime.

The same seeded model and input go through every runtime; the runtime's output is checked against the fp32
eager output within the runtime's stated tolerance (backends/base.py), and its figures at set-up become the case's
`accuracy.*` metrics (workloads/checks.py `record_accuracy`). Work per call:
- FLOPs: the model's analytic count (zoo.py), the same for every runtime, so FLOP/s compares runtimes;
- bytes: the compulsory traffic of one forward pass at this runtime's storage precision: parameters as stored
  (int8 weights 1 byte each, ONNX initializers as exported) + the fp32 input + the fp32 output.
"""

from __future__ import annotations

from collections.abc import Callable

from perfci.workloads.api import WorkloadContext
from perfci.workloads.backends import runtime as get_runtime
from perfci.workloads.checks import record_accuracy


def model_workload(
    ctx: WorkloadContext, model: str, batch: int, runtime: str, graph_opt: str | None = None
) -> Callable[[], object]:
    rt = get_runtime(runtime, graph_opt)
    reason = rt.unsupported(ctx.device)
    if reason:
        ctx.skip(reason)
    import torch

    from perfci.workloads import zoo

    net = zoo.build(model, ctx.seed, ctx.device)
    x = zoo.example_input(model, batch, ctx.seed, ctx.device)
    with torch.inference_mode():
        reference = net(x).float().cpu()
    prepared = rt.prepare(net, x, ctx)
    ctx.flops = zoo.MODELS[model].flops(batch)
    ctx.bytes = prepared.weight_bytes + 4.0 * x.numel() + 4.0 * reference.numel()
    ctx.notes.update(
        {"runtime": runtime, "tolerance": prepared.tolerance.describe(), "torch.threads": torch.get_num_threads()}
    )
    # the accuracy metrics from one forward pass at set-up; the check compares the output again when it runs
    record_accuracy(ctx, [prepared.output()], [reference], prepared.tolerance, "torch eager fp32")
    ctx.check_close(prepared.output, reference, prepared.tolerance, what=f"{runtime} output vs torch eager fp32")
    return prepared.call
