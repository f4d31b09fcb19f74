"""ONNX files as workloads: `perfci run model.onnx`, or `perfci.onnx_workload(path, ...)` in a workload file.

One workload per file, its cases `variant` x `batch`:
- inputs: each input's shape and element type from the model (the ORT session's `get_inputs()`); a symbolic
  leading dimension takes `batch`, other symbolic dimensions take their value from `dims` by name; values come
  from a generator seeded with the run's seed, the same for every variant (so outputs compare);
- variants (onnx_variants.py): fp32 (the file), fp16, int8-dynamic, int8-static, converted once and cached;
- accuracy: every variant other than fp32 runs the same inputs as the fp32 model at set-up, and the worst
  absolute and relative difference, the relative L2 error and the tolerance go into the case's notes under
  "accuracy" (recorded in each round's telemetry), from which the case gets its `accuracy.*` metrics, compared
  like any metric (workloads/checks.py `check_against`); beyond the tolerance, the case fails its check.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from perfci.errors import WorkloadDefinitionError
from perfci.format.model import ParamValue
from perfci.workloads import onnx_variants, surprises
from perfci.workloads.api import Workload, WorkloadContext, workload
from perfci.workloads.backends.ort import initializer_bytes
from perfci.workloads.checks import Tolerance, check_against
from perfci.workloads.model_args import batch_sizes, did_you_mean, positive_int, tolerances_by_variant, variant_names
from perfci.workloads.onnx_variants import INT8_VARIANTS, TOLERANCES, VARIANTS, Feeds
from perfci.workloads.ort_session import open_session, providers_for
from perfci.workloads.torch_model import off_grid_batch

Dim = int | str | None
ELEMENT_TYPES: Mapping[str, str] = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(double)": "float64",
    "tensor(int64)": "int64",
    "tensor(int32)": "int32",
    "tensor(int16)": "int16",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(bool)": "bool",
}
WORKLOAD_NAME = "onnx"


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[Dim, ...]
    element_type: str  # ONNX Runtime's spelling, e.g. "tensor(float)"


def fill_shape(spec: InputSpec, batch: int, dims: Mapping[str, int]) -> tuple[int, ...]:
    """Concrete dimensions: fixed ones kept, named ones from `dims`, a symbolic leading one `batch`."""
    out: list[int] = []
    for i, dim in enumerate(spec.shape):
        if isinstance(dim, int) and dim > 0:
            out.append(dim)
        elif isinstance(dim, str) and dim in dims:
            out.append(int(dims[dim]))
        elif i == 0:
            out.append(batch)
        else:
            label = repr(dim) if dim else f"#{i}"
            raise WorkloadDefinitionError(
                f"input {spec.name!r}: dimension {label} is symbolic and has no value.",
                hint=f"give it one: perfci.onnx_workload(path, dims={{{dim or 'name'!r}: ...}}) in a workload file",
            )
    return tuple(out)


def make_inputs(specs: Sequence[InputSpec], batch: int, dims: Mapping[str, int], seed: int) -> Feeds:
    """Seeded inputs: standard normal floats, integers in [0, 10), booleans at even odds."""
    rng = np.random.default_rng(seed)
    feeds: Feeds = {}
    for spec in specs:
        dtype = ELEMENT_TYPES.get(spec.element_type)
        if dtype is None:
            raise WorkloadDefinitionError(f"input {spec.name!r}: element type {spec.element_type} is not supported.")
        shape = fill_shape(spec, batch, dims)
        if dtype.startswith("float"):
            feeds[spec.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype == "bool":
            feeds[spec.name] = rng.random(shape) < 0.5
        else:
            feeds[spec.name] = rng.integers(0, 10, size=shape).astype(dtype)
    return feeds


# per process: the files (and device kinds) whose variants ran once before any case's memory window, and the fp32
# sessions left open for the accuracy checks (opened in a case's set-up, the fp32 model was that case's memory)
_WARMED: set[tuple[str, str]] = set()
_REFERENCE_SESSIONS: dict[tuple[str, str, int], Any] = {}


@dataclass(frozen=True)
class OnnxFile:
    """One ONNX file and how to feed it."""

    path: Path
    dims: Mapping[str, int] = field(default_factory=dict)
    tolerances: Mapping[str, Tolerance] = field(default_factory=lambda: dict(TOLERANCES))

    def setup(self, ctx: WorkloadContext, variant: str, batch: int) -> Callable[[], object]:
        import onnxruntime as ort
        import torch  # its thread count, which `--threads` sets, is ORT's too: torch and ORT cases get equal CPU

        providers = providers_for(ctx.device, ort.get_available_providers())
        if isinstance(providers, str):
            ctx.skip(providers)
        specs = model_inputs(self.path)
        fixed = fixed_batch(specs)
        if fixed is not None and batch != fixed:
            ctx.skip(f"the model's inputs have a fixed leading dimension {fixed}: batch={batch} cannot be fed")
        feeds = make_inputs(specs, batch, self.dims, ctx.seed)
        threads = torch.get_num_threads()

        def calibration() -> Iterator[Feeds]:
            for i in range(onnx_variants.CALIBRATION_BATCHES):
                yield make_inputs(specs, batch, self.dims, ctx.seed + 1 + i)

        path = onnx_variants.variant_path(self.path, variant, calibration, key=f"b{batch}-s{ctx.seed}")
        sess = open_session(path, providers, threads)
        ctx.bytes = initializer_bytes(path) + sum(float(x.nbytes) for x in feeds.values())
        ctx.notes.update(
            {
                "onnx.file": str(self.path),
                "onnx.variant": variant,
                "onnx.inputs": {k: list(v.shape) for k, v in feeds.items()},
                "ort.version": ort.__version__,
                "ort.providers": sess.get_providers(),
                "ort.intra_op_num_threads": threads,
            }
        )
        if variant != "fp32":
            self._check_against_fp32(ctx, variant, sess, feeds, providers, threads)
        else:  # the reference checked against a second run of itself: NaN in it failed every other variant only
            first = sess.run(None, feeds)
            ctx.check_close(lambda: sess.run(None, feeds), first, FP32_REPEAT, what="fp32 output vs a second run")
        on_cpu = not ctx.device.startswith("cuda")
        if variant == "fp16" and on_cpu and onnx_variants.runs_fp16_as_fp32(path, providers, threads):
            surprises.explain(ctx.notes, FP16_ON_CPU)
        if variant == "int8-static":
            surprises.explain(ctx.notes, surprises.random_calibration_note(onnx_variants.CALIBRATION_BATCHES))
        fallback = surprises.provider_fallback_note(providers, sess.get_providers())
        if fallback:
            surprises.explain(ctx.notes, fallback)
        surprises.explained_check(ctx)  # a failed check's message carries them: its case keeps no notes
        return _runner(sess, feeds, ctx.device)

    def warm(
        self, device: str, params: Mapping[str, ParamValue], variants: Sequence[str], batches: Sequence[int]
    ) -> None:
        """Before a case's memory window (the workload's preload), once per process and device kind: each variant
        of the workload converted (or found in the cache) and run once at a batch no case uses (the model's own
        where it is fixed), and the fp32 session the accuracy checks run left open. What ONNX Runtime and its
        quantization tools load on first use is then no one case's own: the first int8 case of a process read
        23.7 MiB for a model of 7 KB, against 58 KiB for fp32, and was left out under a 1 MiB memory limit. A
        failure here is left to the case's own set-up, which reports it."""
        kind = device.split(":")[0]
        if (str(self.path), kind) in _WARMED:
            return
        _WARMED.add((str(self.path), kind))
        try:
            import onnxruntime as ort
            import torch

            providers = providers_for(device, ort.get_available_providers())
            if isinstance(providers, str):
                return
            threads = torch.get_num_threads()
            specs = model_inputs(self.path)
            batch = fixed_batch(specs) or off_grid_batch(batches)
            feeds = make_inputs(specs, batch, self.dims, 0)

            def calibration() -> Iterator[Feeds]:
                for i in range(onnx_variants.CALIBRATION_BATCHES):
                    yield make_inputs(specs, batch, self.dims, 1 + i)

            for variant in dict.fromkeys(("fp32", *variants)):
                if _int8_on_cpu_only(device, variant) is None:
                    path = onnx_variants.variant_path(self.path, variant, calibration, key=f"warm-b{batch}")
                    open_session(path, providers, threads).run(None, feeds)
            _REFERENCE_SESSIONS[(str(self.path), device, threads)] = open_session(self.path, providers, threads)
        except Exception:  # the case's own set-up meets the same failure and names it
            return

    def _check_against_fp32(
        self, ctx: WorkloadContext, variant: str, sess: Any, feeds: Feeds, providers: list[Any], threads: int
    ) -> None:
        opened = _REFERENCE_SESSIONS.get((str(self.path), ctx.device, threads))
        reference = (opened or open_session(self.path, providers, threads)).run(None, feeds)
        actual = sess.run(None, feeds)
        check_against(ctx, actual, reference, self.tolerances[variant], "fp32", what=f"{variant} output vs fp32")


FP32_REPEAT = Tolerance(max_rel_l2=1e-5)  # the reference against itself: equal but for a GPU's reduction order

FP16_ON_CPU = (
    "the CPU execution provider has no fp16 kernels for most operators: ONNX Runtime runs them in fp32 through "
    "inserted Cast nodes, so this case measures fp32 plus casts"
)


def _runner(sess: Any, feeds: Feeds, device: str) -> Callable[[], object]:
    """What is timed: one run. On CUDA the inputs sit on the device and outputs stay there (I/O binding), so no
    host copies are timed."""
    if not device.startswith("cuda"):
        return lambda: sess.run(None, feeds)
    import onnxruntime as ort

    index = int(device.split(":", 1)[1]) if ":" in device else 0
    binding = sess.io_binding()
    for name, value in feeds.items():
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(value, "cuda", index))
    for out in sess.get_outputs():
        binding.bind_output(out.name, "cuda", index)
    return lambda: sess.run_with_iobinding(binding)


def model_inputs(path: Path) -> list[InputSpec]:
    """The graph's inputs that are not initializers, from the file (without loading external weights)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    if not model.graph.node:  # an empty file parses as an empty model; each variant failed its own way at run time
        size = path.stat().st_size
        raise WorkloadDefinitionError(f"{path}: not an ONNX model: it holds no graph ({size:,} bytes).")
    inits = {t.name for t in model.graph.initializer}
    specs = []
    for value in model.graph.input:
        if value.name in inits:
            continue
        tensor = value.type.tensor_type
        shape = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim)
        type_name = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type).name if tensor.elem_type else "?"
        ort_type = {"float32": "float", "float64": "double"}.get(type_name, type_name)
        specs.append(InputSpec(value.name, shape, f"tensor({ort_type})"))
    return specs


def fixed_batch(specs: Sequence[InputSpec]) -> int | None:
    """The first input's leading dimension where no input has a symbolic one (the model takes one batch size)."""
    leads = [s.shape[0] for s in specs if s.shape]
    if not leads or any(not isinstance(d, int) or d <= 0 for d in leads):
        return None
    return leads[0] if isinstance(leads[0], int) else None


def symbolic_dims(shapes: Iterable[Sequence[object]]) -> list[str]:
    """The named symbolic dimensions of these input shapes, in order of appearance, each once."""
    return list(dict.fromkeys(d for shape in shapes for d in shape if isinstance(d, str) and d))


def checked_dims(who: str, dims: object, names: Sequence[str], model: str) -> dict[str, int]:
    """`dims` of an ONNX workload: each key one of the model's symbolic dimensions `names`, each value an integer of
    at least 1 (a name the model lacks was ignored without a word)."""
    if dims is None:
        return {}
    if not isinstance(dims, Mapping):
        raise WorkloadDefinitionError(f"{who}: dims={dims!r:.60} is not a dict from dimension name to size.")
    for key, value in dims.items():
        if key not in names:
            has = f"its symbolic dimensions are {', '.join(map(repr, names))}" if names else "it has none"
            raise WorkloadDefinitionError(
                f"{who}: dims names {key!r:.40}, which is not a symbolic dimension of {model} ({has}).",
                hint=did_you_mean(key, names),
            )
        if not positive_int(value):
            raise WorkloadDefinitionError(f"{who}: dims[{key!r}] = {value!r:.40} is not an integer of at least 1.")
    return {str(k): int(v) for k, v in dims.items()}


def _int8_on_cpu_only(device: str, variant: str, **_: object) -> str | None:
    if variant in INT8_VARIANTS and device != "cpu":
        return "the int8 variants use ONNX Runtime's CPU int8 kernels"
    return None


def onnx_workload(
    path: str | Path,
    *,
    batch: int | Sequence[int] | None = None,
    variants: str | Sequence[str] = VARIANTS,
    dims: Mapping[str, int] | None = None,
    devices: Sequence[str] = ("cpu", "cuda"),
    name: str | None = None,
    tolerances: Mapping[str, Tolerance | float] | None = None,
    tags: Sequence[str] = ("onnx",),
) -> Workload:
    """A workload running the ONNX file at `path` (relative to the calling file's folder) for each variant and
    batch size; `batch` defaults to the model's fixed leading dimension, else 1 (`batch=8` is `batch=[8]`); `dims`
    may name only the model's symbolic dimensions; a tolerance given as a number is the largest relative L2 error
    allowed."""
    if not isinstance(path, str | os.PathLike):  # onnx_workload(123): a TypeError at pathlib's line
        raise WorkloadDefinitionError(f"onnx_workload: path={path!r:.60} is not the path of an ONNX file.")
    file = Path(path)
    if not file.is_absolute():
        caller = inspect.currentframe()
        where = caller.f_back.f_globals.get("__file__") if caller and caller.f_back else None
        file = (Path(where).parent if where else Path.cwd()) / file
    if not file.is_file():
        raise WorkloadDefinitionError(f"{file}: no such ONNX file.")
    who = f"onnx workload {name or WORKLOAD_NAME!r} ({file.name})"
    kinds = variant_names(who, variants, VARIANTS, "ONNX")
    try:  # a truncated file raised protobuf's DecodeError naming neither the file nor the workload
        inputs = model_inputs(file)
    except WorkloadDefinitionError:
        raise
    except Exception as exc:
        raise WorkloadDefinitionError(f"{file}: cannot be read as an ONNX model: {type(exc).__name__}: {exc}") from None
    sizes: list[ParamValue] = list(batch_sizes(who, batch)) if batch is not None else [fixed_batch(inputs) or 1]
    named = checked_dims(who, dims, symbolic_dims(s.shape for s in inputs), file.name)
    leading = sorted({str(s.shape[0]) for s in inputs if s.shape and isinstance(s.shape[0], str)} & set(named))
    if leading:  # it overrode `batch`: every case fed the same size, and per-item figures divided by the wrong one
        raise WorkloadDefinitionError(
            f"{who}: dims names {leading[0]!r}, the inputs' leading (batch) dimension, which `batch` sets.",
            hint=f"give its sizes with batch=[...] and leave {leading[0]!r} out of dims",
        )
    for spec_in in inputs:  # a symbolic dimension without a value failed every case at run time (exit 3)
        try:
            fill_shape(spec_in, 1, named)
        except WorkloadDefinitionError as exc:
            raise WorkloadDefinitionError(f"{who}: {exc.message}", hint=exc.hint) from None
    spec = OnnxFile(file, named, {**TOLERANCES, **tolerances_by_variant(who, tolerances, VARIANTS, "ONNX")})

    def setup(ctx: WorkloadContext, variant: str, batch: int) -> Callable[[], object]:
        return spec.setup(ctx, variant, batch)

    grid: dict[str, Sequence[ParamValue]] = {"variant": list(kinds), "batch": sizes}
    made = workload(params=grid, devices=devices, name=name or WORKLOAD_NAME, tags=tags, skip=_int8_on_cpu_only)(setup)
    batches = [b for b in sizes if isinstance(b, int)]

    def preload(device: str, params: Mapping[str, ParamValue]) -> None:
        spec.warm(device, params, kinds, batches)

    return dataclasses.replace(made, preload=preload)


def module_for(path: Path) -> ModuleType:
    """A module holding the one workload of an ONNX file named on the command line (discovery's stand-in for
    an imported workload file)."""
    name = f"perfci_onnx_{abs(hash(str(path.resolve())))}_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    module = ModuleType(name)
    module.__file__ = str(path)
    module.workload = onnx_workload(path.resolve())  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    return module
