"""The built-in suites' set-ups, in process: every CPU kernel, and each model through each CPU runtime, builds,
passes its correctness check and declares its work; the zoo's FLOP formulas agree with torch's counter where
the counter is right."""

from __future__ import annotations

import pytest

from perfci.metrics.registry import ACCURACY_MAX_ABS, ACCURACY_REL_L2
from perfci.workloads.api import WorkloadContext
from perfci.workloads.discovery import builtin_source, load_source, workloads_in

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def one_thread() -> None:
    torch.set_num_threads(1)


def test_every_cpu_kernel_builds_checks_and_declares_bytes() -> None:
    module = load_source(builtin_source("kernels"))
    for wl in workloads_in(module):
        for spec in wl.cases("kernels", ""):
            if spec.device != "cpu":
                continue
            ctx = WorkloadContext("cpu", dict(spec.params), seed=0)
            fn = wl(ctx, **spec.params)
            if ctx.check is not None:
                ctx.check()
            assert fn() is not None
            assert ctx.bytes and ctx.bytes > 0, spec.id


def test_kernel_inputs_are_seeded() -> None:
    wl = next(w for w in workloads_in(load_source(builtin_source("kernels"))) if w.name == "row_sum")
    outs = [wl(WorkloadContext("cpu", {}, seed=s), rows=1024, cols=4096)() for s in (0, 0, 1)]
    assert torch.equal(outs[0], outs[1]) and not torch.equal(outs[0], outs[2])


@pytest.mark.parametrize("model", ["mlp", "encoder", "cnn"])
def test_each_model_runs_and_matches_eager_on_every_cpu_runtime(model: str) -> None:
    onnx = {w.name: w for w in workloads_in(load_source(builtin_source("onnx")))}
    models = {w.name: w for w in workloads_in(load_source(builtin_source("models")))}
    declared = set()
    for wl, runtime in [(onnx[model], r) for r in ("eager", "torch-int8", "ort", "ort-int8")] + [
        (models[model], "autocast-bf16")
    ]:
        ctx = WorkloadContext("cpu", {}, seed=0)
        fn = wl(ctx, batch=1, runtime=runtime)
        assert ctx.check is not None
        ctx.check()  # raises AssertionError beyond the runtime's tolerance
        fn()
        assert ctx.notes["runtime"] == runtime and ctx.notes["tolerance"]
        # the check's figures at set-up, which become the case's accuracy.* metrics, with the tolerance's bounds
        accuracy, bounds = ctx.notes["accuracy"], ctx.notes["tolerances"]
        assert accuracy["reference"] == "torch eager fp32" and set(bounds) == {ACCURACY_REL_L2, ACCURACY_MAX_ABS}
        assert accuracy["rel_l2"] <= bounds[ACCURACY_REL_L2] and accuracy["max_abs_diff"] <= bounds[ACCURACY_MAX_ABS]
        declared.add(ctx.flops)
        if runtime.startswith("ort"):
            assert ctx.notes["ort.providers"] == ["CPUExecutionProvider"]
            assert ctx.notes["ort.intra_op_num_threads"] == torch.get_num_threads() == 1
        if runtime.endswith("int8") and model != "cnn":
            assert ctx.bytes is not None and ctx.bytes < 0.5 * _eager_bytes(onnx[model])  # int8 weights
    assert len(declared) == 1  # same FLOPs whatever the runtime


def _eager_bytes(wl: object) -> float:
    ctx = WorkloadContext("cpu", {}, seed=0)
    wl(ctx, batch=1, runtime="eager")  # type: ignore[operator]
    assert ctx.bytes is not None
    return ctx.bytes


def test_check_catches_a_runtime_that_is_off_by_one_percent(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from perfci.workloads import model_case
    from perfci.workloads.backends import runtime as real_runtime

    class OffByOnePercent:
        name = "ort"

        def unsupported(self, device: str) -> str | None:
            return None

        def prepare(self, model: object, example: object, ctx: WorkloadContext) -> object:
            prepared = real_runtime("ort").prepare(model, example, ctx)
            return replace(prepared, output=lambda: prepared.output() * 1.01)  # type: ignore[operator]

    monkeypatch.setattr(model_case, "get_runtime", lambda name, graph_opt=None: OffByOnePercent())
    ctx = WorkloadContext("cpu", {}, seed=0)
    model_case.model_workload(ctx, "mlp", 1, "ort")
    assert ctx.check is not None
    with pytest.raises(AssertionError, match=r"ort output vs torch eager fp32: .* values off"):
        ctx.check()
    assert ctx.notes["accuracy"]["rel_l2"] == pytest.approx(0.01, rel=1e-3)  # what the accuracy metric records


@pytest.mark.parametrize("model", ["mlp", "cnn", "encoder"])
def test_zoo_flops_against_torch_flop_counter(model: str) -> None:
    from torch.utils.flop_counter import FlopCounterMode

    from perfci.workloads import zoo

    net = zoo.build(model, 0, "cpu")
    x = zoo.example_input(model, 2, 0, "cpu")
    counter = FlopCounterMode(display=False)
    with counter:  # grad mode: under no_grad the encoder's fused fast paths are not counted at all
        net(x)
    counted = counter.get_total_flops()
    if model == "encoder":
        # the counter misses scaled_dot_product_attention on CPU: add Q K^T and P V by formula
        assert counted == zoo.MODELS[model].flops(2) - 4.0 * 2 * zoo.SEQ * zoo.SEQ * 256
    else:
        assert counted == zoo.MODELS[model].flops(2)
