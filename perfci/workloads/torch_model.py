"""Library models in one line: `perfci.model_workload(factory, inputs=..., variants=[...], batch=[...])`.

One workload per call, its cases `variant` x `batch`, for a torch module that `factory()` builds (a torchvision or
transformers model with random weights needs no network):

- `inputs(batch)` gives the call's inputs: a tensor, a tuple of tensors (positional arguments) or a dict
  (keyword arguments); they are moved to the case's device;
- variants (MODEL_VARIANTS): `eager` (under `torch.no_grad`), `inference` (`torch.inference_mode`),
  `channels-last` (module and 4-d inputs in channels-last memory format), `bf16` and `fp16` (autocast on the
  case's device), `compile` (`torch.compile`, compiled at set-up: its first call is not timed);
- accuracy: at set-up every variant's output is compared with eager fp32's on the same inputs; the worst absolute
  and relative difference, the relative L2 error and the tolerance go into the case's notes under "accuracy"
  (each round's telemetry), from which the case gets its `accuracy.*` metrics (workloads/checks.py
  `check_against`), and beyond the tolerance the case fails its check. Set-up is seeded (`torch.manual_seed`
  with the run's seed before the model and its inputs are made), so the figures repeat exactly run to run.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from perfci.errors import WorkloadDefinitionError
from perfci.format.model import ParamValue
from perfci.workloads import surprises
from perfci.workloads.api import LocatedFailure, Workload, WorkloadContext, defined_at, workload
from perfci.workloads.checks import Tolerance, check_against
from perfci.workloads.model_args import batch_sizes, tolerances_by_variant, variant_names

MODEL_VARIANTS = ("eager", "inference", "channels-last", "bf16", "fp16", "compile")
DEFAULT_VARIANTS = ("eager", "inference", "bf16")
# against eager fp32 on the same inputs: layout and mode changes only reorder arithmetic; reduced precision is
# judged by the relative L2 error, as for ONNX variants
MODEL_TOLERANCES: Mapping[str, Tolerance] = {
    "eager": Tolerance(rtol=1e-5, atol=1e-6),  # a GPU library may pick another algorithm on a second call
    "inference": Tolerance(rtol=1e-5, atol=1e-6),
    # another memory layout makes GPU convolution libraries pick other algorithms (TF32 ones on by default for
    # cuDNN convolutions): ResNet-50 on an H200 read 1.8e-4 (docs/gpu.md)
    "channels-last": Tolerance(max_rel_l2=1e-3),
    "compile": Tolerance(max_rel_l2=1e-3),
    "bf16": Tolerance(max_rel_l2=0.05),
    "fp16": Tolerance(max_rel_l2=0.01),
}
WORKLOAD_NAME = "model"


def _to(value: Any, device: str, channels_last: bool = False) -> Any:
    """Tensors in `value` (a tensor, tuple, list or dict of them) on `device`; 4-d ones channels-last if asked."""
    if hasattr(value, "to") and hasattr(value, "dim"):
        import torch

        moved = value.to(device)
        return moved.contiguous(memory_format=torch.channels_last) if channels_last and moved.dim() == 4 else moved
    if isinstance(value, dict):
        return {k: _to(v, device, channels_last) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_to(v, device, channels_last) for v in value)
    return value


def _tensors(out: Any) -> list[Any]:
    """A model output's tensors, in order: transformers' ModelOutput, dicts, tuples and lists are flattened."""
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, list | tuple):
        return [t for item in out for t in _tensors(item)]
    return [out.detach().float().cpu().numpy()] if hasattr(out, "detach") else []


def _leading_sizes(value: Any) -> list[int]:
    """The first dimension of each tensor in a model's inputs (a tensor, or tuples, lists and dicts of them)."""
    if isinstance(value, dict):
        return [n for v in value.values() for n in _leading_sizes(v)]
    if isinstance(value, list | tuple):
        return [n for v in value for n in _leading_sizes(v)]
    shape = getattr(value, "shape", None)
    return [int(shape[0])] if shape is not None and len(shape) > 0 else []


def _check_batch(args: Any, batch: int) -> None:
    """`inputs(batch)` must give a batch of `batch` items (the first dimension of at least one input tensor):
    per-item figures divide by it, and inputs that ignore it made a 4-row call read as 64 items."""
    sizes = _leading_sizes(args)
    if sizes and batch not in sizes:
        raise WorkloadDefinitionError(
            f"inputs({batch}) gives tensors whose first dimensions are {sorted(set(sizes))}, none of them {batch}: "
            "the batch must be the inputs' first dimension (time per item divides by it)."
        )


def _caller(model: Any, args: Any) -> Callable[[], object]:
    if isinstance(args, dict):
        return lambda: model(**args)
    if isinstance(args, tuple):
        return lambda: model(*args)
    return lambda: model(args)


def _mode(torch: Any, variant: str, device: str) -> Callable[[], AbstractContextManager[object]]:
    kind = device.split(":", 1)[0]
    if variant == "inference":
        return lambda: torch.inference_mode()
    if variant in ("bf16", "fp16"):
        dtype = torch.bfloat16 if variant == "bf16" else torch.float16
        return lambda: torch.autocast(device_type=kind, dtype=dtype)
    return lambda: torch.no_grad()


def _refuse_a_module(given: object) -> None:
    """A module given in place of its factory (`model_workload(net, ...)`: a module is callable too) is refused at
    definition: called with no arguments, its forward raised "missing 1 required positional argument" in every
    case, and weights made when the file was imported differ from process to process, where a factory called
    after the run's seed repeats them exactly."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(given, torch.nn.Module):
        raise WorkloadDefinitionError(
            f"model_workload takes a factory that builds the module, not a module ({type(given).__name__}).",
            hint="pass a function that builds it, e.g. `lambda: MyNet()`: it runs in each case's set-up after the "
            "run's seed is set, so the weights and the accuracy figures repeat in every process",
        )


_warmed: set[tuple[str, str]] = set()  # (device kind, variant) the small model has gone through in this process


def warm_variant(device: str, params: Mapping[str, ParamValue]) -> None:
    """Run a small model through a case's set-up once per process, device kind and variant, before the first such
    case's memory is measured: what loads on first use (autocast's kernels, the accuracy check's NumPy path, the
    compiler, convolutions) is no one case's own. Unwarmed, the first bf16 case of a process read 5.8 MiB against
    1.9 MiB for the next, the first compile case 131 MiB against 4.2 MiB. It warms only what the small model uses;
    `TorchModel.warm` then warms the case's own layers (benchmarks/first_use_memory.py,
    docs/measurement.md).
    A failure here is left to the case's own set-up, which reports it."""
    variant = str(params.get("variant", "eager"))
    key = (device.split(":")[0], variant)
    if key in _warmed:
        return
    _warmed.add(key)
    tiny = TorchModel(_tiny_module, _tiny_inputs, MODEL_TOLERANCES)
    for each in dict.fromkeys(("eager", variant)):
        ctx = WorkloadContext(device=device, params={}, seed=0)
        try:
            tiny.setup(ctx, each, 8)  # a product of 8 x 64 at least: 8 x 8 left bf16's CPU kernels unloaded
            if ctx.check is not None:
                ctx.check()
        except Exception:  # the case's own set-up meets the same failure and names it
            return


def off_grid_batch(batches: Sequence[int]) -> int:
    """The smallest batch size no case uses: the warm-up's own shapes take no case's shape-specific caches."""
    taken, batch = set(batches), 1
    while batch in taken:
        batch += 1
    return batch


def _tiny_module() -> Any:
    import torch

    conv = (torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten())  # image models' first convolution
    return torch.nn.Sequential(*conv, torch.nn.Linear(8 * 14 * 14, 64), torch.nn.GELU())


def _tiny_inputs(batch: int) -> Any:
    import torch

    return torch.ones(batch, 3, 16, 16)


class TorchModel:
    """Builds one case of a model workload (module docstring)."""

    def __init__(self, factory: Callable[[], Any], inputs: Callable[[int], Any], tolerances: Mapping[str, Tolerance]):
        self.factory, self.inputs, self.tolerances = factory, inputs, tolerances
        # the (device kind, variant) pairs `warm` has rehearsed this model in, in this process
        self.warmed: set[tuple[str, str]] = set()

    def build(self) -> Any:
        """The factory's module; anything else is the case's failure at the factory's line (a function or None
        failed in perfci's code: "'function' object has no attribute 'to'")."""
        import torch

        model = self.factory()
        if not isinstance(model, torch.nn.Module):
            raise LocatedFailure(
                f"{defined_at(self.factory)}the model factory returned {type(model).__name__}, not a torch.nn.Module "
                "(model_workload takes a function that builds the module, e.g. `lambda: Net()`)."
            )
        return model

    def warm(self, device: str, params: Mapping[str, ParamValue], batches: Sequence[int]) -> None:
        """Before a case's memory window (the workload's preload): the small model in the case's variant
        (`warm_variant`), then this model itself in eager and the case's own variant (`rehearse`: one build), once
        per process, device kind and variant. What its layers load on first use (attention's, a recurrent layer's,
        their bf16 kernels; on CUDA the kernels' code, loaded lazily) is then no one case's, whichever case comes
        first and whichever cases the run selected: each case finds its own variant and the eager reference its
        set-up computes already rehearsed. Other variants are never called here: one that hangs or runs out of
        memory fails its own cases only, and a variant the run deselected does not run at all. On a CPU it runs at
        a batch size no case uses, so that each case still pays for the caches of its own shapes; on CUDA at each
        of the workload's batch sizes, because the kernels a GPU library picks, and loads, depend on the size
        (docs/measurement.md, "Memory")."""
        warm_variant(device, params)
        kind = device.split(":")[0]
        variant = str(params.get("variant", "eager"))
        # a compile case's model in eager: a second compilation would cost seconds, and its premium is the
        # compiler's, which the small model takes
        own = "eager" if variant == "compile" else variant
        # eager first: a channels-last conversion stays on the model, so it goes last
        calls = [v for v in dict.fromkeys(("eager", own)) if (kind, v) not in self.warmed and not _cpu_half(device, v)]
        if not calls:
            return
        self.warmed.update((kind, v) for v in calls)
        sizes = sorted(set(batches)) if kind == "cuda" else [off_grid_batch(batches)]
        self.rehearse(device, calls, sizes)

    def rehearse(self, device: str, variants: Sequence[str], batches: Sequence[int]) -> None:
        """One model, built once, called once in each variant (in order: a channels-last conversion stays) at each
        batch size, keeping nothing. A failure here is left to the case's own set-up, which reports it."""
        import torch

        try:
            torch.manual_seed(0)
            model = self.build().to(device).eval()
            for variant in variants:
                if variant == "channels-last":
                    model = model.to(memory_format=torch.channels_last)
                mode = _mode(torch, variant, device)
                for batch in batches:
                    args = _to(self.inputs(batch), device, channels_last=variant == "channels-last")
                    with mode():
                        _tensors(_caller(model, args)())
            if device.startswith("cuda"):
                torch.cuda.synchronize()
        except Exception:  # the case's own set-up meets the same failure and names it
            return

    def setup(self, ctx: WorkloadContext, variant: str, batch: int) -> Callable[[], object]:
        import torch

        torch.manual_seed(ctx.seed)
        model = self.build().to(ctx.device).eval()
        args = _to(self.inputs(batch), ctx.device)
        _check_batch(args, batch)
        with torch.no_grad():
            first = _caller(model, args)()
        reference = _tensors(first)
        if not reference:  # accuracy would read 0 for every variant, which then passes any tolerance
            raise WorkloadDefinitionError(
                f"the model's output holds no tensors ({type(first).__name__}), so no variant's "
                "accuracy can be checked; return a tensor, or a tuple, list or dict of them."
            )
        if variant == "channels-last":
            model = model.to(memory_format=torch.channels_last)
            args = _to(args, ctx.device, channels_last=True)
        if variant == "compile":
            model = torch.compile(model)
        call, mode = _caller(model, args), _mode(torch, variant, ctx.device)

        def run() -> object:
            with mode():
                return call()

        actual = _tensors(run())  # also compiles `compile` and warms every variant before timing
        tolerance = self.tolerances[variant]
        check_against(ctx, actual, reference, tolerance, "eager fp32", what=f"{variant} output vs eager")
        _explain(ctx, torch, variant, run)
        surprises.explained_check(ctx)  # a failed check's message carries them: its case keeps no notes
        return run


def _explain(ctx: WorkloadContext, torch: Any, variant: str, run: Callable[[], object]) -> None:
    """Notes that explain a surprising figure (workloads/surprises.py): reduced precision on a CPU without
    native support; a compiled model that compiles again on its second call (then timed calls may too)."""
    if variant in ("bf16", "fp16") and not ctx.device.startswith("cuda"):
        note = surprises.reduced_precision_note(variant, surprises.cpu_flags())
        if note:
            surprises.explain(ctx.notes, note)
    if variant == "compile":
        before = surprises.compiled_graphs(torch)
        run()
        note = surprises.recompile_note(before, surprises.compiled_graphs(torch))
        if note:
            surprises.explain(ctx.notes, note)


def _cpu_half(device: str, variant: str, **_: object) -> str | None:
    if variant == "fp16" and device == "cpu":
        return "fp16 autocast is for GPUs; on a CPU most operators run in fp32 through casts (use bf16)"
    return None


def _check_calls(who: str, fn: Callable[..., Any], args: int, what: str, how: str) -> None:
    """`fn` can be called with `args` positional arguments (the factory with none, inputs with the batch): the two
    swapped failed every case at run time, "missing 1 required positional argument" at perfci's line."""
    try:
        inspect.signature(fn).bind(*range(args))
    except TypeError:
        raise WorkloadDefinitionError(
            f"{who}: its {what} cannot be called with {args} argument{'s' if args != 1 else ''} ({fn!r:.60}); the "
            f"{what} {how}."
        ) from None
    except ValueError:  # no signature to read (a builtin): its calls will tell
        return


def model_workload(
    factory: Callable[[], Any],
    *,
    inputs: Callable[[int], Any],
    variants: str | Sequence[str] = DEFAULT_VARIANTS,
    batch: int | Sequence[int] = (1,),
    devices: Sequence[str] = ("cpu", "cuda"),
    name: str | None = None,
    tolerances: Mapping[str, Tolerance | float] | None = None,
    tags: Sequence[str] = ("model",),
) -> Workload:
    """A workload running the module `factory()` builds on `inputs(batch)`, for each variant and batch size
    (`batch=8` is `batch=[8]`); a tolerance given as a number is the largest relative L2 error allowed."""
    default_name = getattr(factory, "__name__", "")
    default_name = default_name if default_name.isidentifier() else WORKLOAD_NAME
    who = f"model workload {name or default_name!r}"
    kinds = variant_names(who, variants, MODEL_VARIANTS, "model")
    sizes = batch_sizes(who, batch)
    if not callable(factory) or not callable(inputs):
        raise WorkloadDefinitionError(f"{who}: model_workload needs a callable factory and a callable inputs(batch).")
    _refuse_a_module(factory)
    _check_calls(who, factory, 0, "factory", "builds the module: `lambda: MyNet()`")
    _check_calls(who, inputs, 1, "inputs", "takes the batch size: `lambda batch: torch.randn(batch, 64)`")
    spec = TorchModel(
        factory, inputs, {**MODEL_TOLERANCES, **tolerances_by_variant(who, tolerances, MODEL_VARIANTS, "model")}
    )

    def setup(ctx: WorkloadContext, variant: str, batch: int) -> Callable[[], object]:
        return spec.setup(ctx, variant, batch)

    grid: dict[str, Sequence[ParamValue]] = {"variant": list(kinds), "batch": list(sizes)}
    made = workload(params=grid, devices=devices, name=name or default_name, tags=tags, skip=_cpu_half)(setup)

    def preload(device: str, params: Mapping[str, ParamValue]) -> None:
        spec.warm(device, params, sizes)

    return dataclasses.replace(made, preload=preload)
