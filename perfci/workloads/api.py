"""`@perfci.workload`: declare a parameterised piece of work to measure.

The decorated function builds its inputs and returns the callable to time. The decorator returns a `Workload`
object (itself callable like the original function); discovery finds these objects in a module's namespace, so
there is no global registry.

Two ways to leave a case out:
- `skip=`: a predicate over the parameters and the device, evaluated when the grid is expanded (listing). A true
  value or a non-empty string (the reason) removes that combination from the grid: use it for combinations that
  make no sense (bf16 on a CPU without bf16 units, sizes meant for another device).
- `ctx.skip(reason)` inside the set-up, at run time: for what only the runner can tell (triton not installed,
  no CUDA execution provider). The case is listed, and running it reports the reason.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import itertools
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, NoReturn, overload

from perfci.errors import WorkloadDefinitionError
from perfci.format.model import CaseSpec, ParamValue
from perfci.workloads.checks import Tolerance, assert_close

SetupFn = Callable[..., Callable[[], object]]
SkipFn = Callable[..., bool | str | None]  # (device=..., **params) -> True or a reason to skip
# a parameter's values: one list for every device, or a list per device ({"cpu": [256], "cuda": [4096]})
ParamValues = Sequence[ParamValue] | Mapping[str, Sequence[ParamValue]]
PARAM_TYPES = (str, int, float, bool)


class SkipCase(Exception):
    """Raised by a set-up (through `ctx.skip`) when this runner cannot run the case; the message is the reason."""


class LocatedFailure(RuntimeError):
    """A case's failure whose message already says where it happened in the user's code (a pytest test's
    `bench/test_b.py:19: AssertionError: ...`): reported as it is, without the place perfci raised it from."""


@dataclass
class WorkloadContext:
    """What a workload's set-up receives. `flops`, `bytes`, `teardown` and `check` may be set by the set-up."""

    device: str
    params: dict[str, ParamValue]
    seed: int
    flops: float | None = None
    bytes: float | None = None
    teardown: Callable[[], None] | None = None
    check: Callable[[], None] | None = None  # raises AssertionError when the output is wrong
    notes: dict[str, Any] = field(default_factory=dict)  # facts worth recording (threads, providers, ...)

    def skip(self, reason: str) -> NoReturn:
        """Give up on this case on this runner, with the reason (e.g. "triton is not installed")."""
        raise SkipCase(reason)

    def check_close(
        self, produce: Callable[[], object], expected: object, tolerance: Tolerance, what: str = "output"
    ) -> None:
        """Set `check` to compare `produce()` with `expected` (a tensor or array) within `tolerance`."""
        self.check = lambda: assert_close(produce(), expected, tolerance, what)


MAX_GRID = 10_000  # a workload's parameter combinations on one device
MADE_KEY = "__perfci_made__"  # a workload file's namespace: every workload its own code made, in order
_loading: list[dict[str, Any]] = []  # the namespaces of the workload files being imported, innermost last


@contextlib.contextmanager
def recording_workloads(namespace: dict[str, Any]) -> Iterator[None]:
    """While a workload file runs in `namespace`: every workload its code makes (directly, in a loop, through a
    helper of the file or `model_workload`) is listed under MADE_KEY, kept or not under a name of its own (made in a
    loop under one name, or in a list, all but one were never measured, without a word)."""
    _loading.append(namespace)
    try:
        yield
    finally:
        _loading.pop()


def _made_by_file(frame: FrameType | None, target: dict[str, Any]) -> bool:
    """Whether the workload being made comes from the workload file's own code (namespace `target`): its module
    code, or a helper it calls, wherever that helper is defined (a `_helpers.py` beside it: its workloads were
    dropped without a word). Not one made while the file imports a module: that module's code made it (a shared
    file of workloads imported by two workload files would otherwise be measured under each)."""
    while frame is not None:
        if frame.f_globals is target:
            return True
        if frame.f_code.co_filename.startswith("<frozen importlib"):  # inside an import: another module's code
            return False
        frame = frame.f_back
    return False


@dataclass(frozen=True)
class Workload:
    name: str
    setup: SetupFn
    params: Mapping[str, ParamValues] = field(default_factory=dict)
    devices: tuple[str, ...] = ("cpu",)
    suite: str = ""
    tags: tuple[str, ...] = ()
    skip: SkipFn | None = None
    timing: Mapping[str, Any] = field(default_factory=dict)
    # work shared by several cases, done before a case's own memory is measured, given the case's device and
    # parameters: a pytest file's session (it sets up all of the file's measuring tests at once), the first use of
    # a model workload's machinery; None for a workload whose set-up is all its own
    preload: Callable[[str, Mapping[str, ParamValue]], object] | None = None

    def __post_init__(self) -> None:
        if not _loading:
            return
        target = _loading[-1]
        if _made_by_file(inspect.currentframe(), target):
            # one entry a set-up: `model_workload` makes its workload, then a copy with more
            made = target.setdefault(MADE_KEY, [])
            made[:] = [w for w in made if w.setup is not self.setup]
            made.append(self)

    def __call__(self, ctx: WorkloadContext, **params: ParamValue) -> Callable[[], object]:
        made = self.setup(ctx, **params)
        if not callable(made):  # else the first call failed in perfci's code: "'NoneType' object is not callable"
            raise LocatedFailure(f"{defined_at(self.setup)}workload {self.name!r}: {_not_callable(made)}")
        if (
            inspect.iscoroutinefunction(made)
            or inspect.isasyncgenfunction(made)
            or inspect.isgeneratorfunction(made)
            or inspect.iscoroutinefunction(type(made).__call__)  # an object with `async def __call__`
        ):  # timed: making a coroutine or a generator, never running it
            raise LocatedFailure(
                f"{defined_at(self.setup)}workload {self.name!r}: its set-up returned an async or generator function; "
                "a call of it only makes a coroutine or generator, which would be timed instead of the work. Return "
                "a plain callable "
                "(e.g. `return lambda: loop.run_until_complete(step())`)."
            )
        return made

    def values(self, key: str, device: str) -> Sequence[ParamValue]:
        declared = self.params[key]
        if isinstance(declared, Mapping):
            return declared.get(device.split(":")[0], ())
        return declared

    def grid(self, device: str | None = None) -> list[dict[str, ParamValue]]:
        """The Cartesian product of the parameters' values (on `device`, for per-device values)."""
        keys = list(self.params)
        dev = device or self.devices[0]
        if (size := math.prod(len(self.values(k, dev)) for k in keys)) > MAX_GRID:  # a million took 80 s to list
            raise WorkloadDefinitionError(
                f"workload {self.name!r}: its parameter grid has {size:,} combinations on {dev}, more than the "
                f"{MAX_GRID:,} a workload may have.",
                hint="narrow the values, or split the grid into several workloads",
            )
        combos = itertools.product(*(self.values(k, dev) for k in keys))
        return [dict(zip(keys, values, strict=True)) for values in combos]

    def skip_reason(self, params: Mapping[str, ParamValue], device: str) -> str | None:
        if self.skip is None:
            return None
        try:
            verdict = self.skip(device=device, **params)
        except TypeError as exc:
            raise WorkloadDefinitionError(
                f"workload {self.name!r}: its skip predicate cannot be called as skip(device=..., "
                f"{', '.join(f'{k}=...' for k in params)}): {exc}.",
                hint="accept the parameters by name, or **kwargs",
            ) from None
        except Exception as exc:  # a predicate that raises must not end `perfci list` in a traceback
            raise WorkloadDefinitionError(
                f"workload {self.name!r}: its skip predicate raised {type(exc).__name__}: {exc} "
                f"(device={device!r}, {', '.join(f'{k}={v!r}' for k, v in params.items())})."
            ) from None
        if verdict is True:
            return "skipped by the workload's skip predicate"
        return str(verdict) if verdict else None

    def all_cases(self, stem: str, source: str) -> list[tuple[CaseSpec, str | None]]:
        """Every combination with the reason it is skipped (None: it runs). Two combinations whose ids are the
        same (values with "," or "=" in them can spell another parameter) are a WorkloadDefinitionError: one of
        them would be dropped without a word."""
        full = f"{stem}.{self.name}"
        out = [
            (
                CaseSpec(workload=full, params=p, device=d, source=source, tags=self.tags, suite=self.suite or stem),
                self.skip_reason(p, d),
            )
            for d in self.devices
            for p in self.grid(d)
        ]
        seen: dict[str, CaseSpec] = {}
        for spec, _ in out:
            other = seen.setdefault(spec.id, spec)
            if other is not spec:
                raise WorkloadDefinitionError(
                    f"workload {self.name!r}: parameters {dict(other.params)!r} and {dict(spec.params)!r} give the "
                    f"same case id {spec.id!r}.",
                    hint="parameter values must not spell other parameters (avoid ',' and '=' in strings)",
                )
        return out

    def cases(self, stem: str, source: str) -> list[CaseSpec]:
        return [spec for spec, reason in self.all_cases(stem, source) if reason is None]


@overload
def workload(fn: SetupFn) -> Workload: ...


@overload
def workload(
    fn: None = None,
    *,
    params: Mapping[str, ParamValues] | None = None,
    devices: Sequence[str] = ("cpu",),
    name: str | None = None,
    suite: str = "",
    tags: Sequence[str] = (),
    skip: SkipFn | None = None,
    timing: Mapping[str, Any] | None = None,
) -> Callable[[SetupFn], Workload]: ...


def workload(
    fn: SetupFn | None = None,
    *,
    params: Mapping[str, ParamValues] | None = None,
    devices: Sequence[str] = ("cpu",),
    name: str | None = None,
    suite: str = "",
    tags: Sequence[str] = (),
    skip: SkipFn | None = None,
    timing: Mapping[str, Any] | None = None,
) -> Workload | Callable[[SetupFn], Workload]:
    """Decorator: `@workload` or `@workload(params={...}, devices=[...])`."""

    def wrap(f: SetupFn) -> Workload:
        grid = dict(params or {})
        who = f"workload {name or getattr(f, '__name__', f)!r}"
        if inspect.iscoroutinefunction(f) or inspect.isasyncgenfunction(f):  # every case failed at run time
            raise WorkloadDefinitionError(
                f"{who}: its set-up is an async function; perfci calls it as a plain one. Make the set-up a plain "
                "function that returns the callable to time."
            )
        _validate_labels(who, name, suite, tags)
        _validate(who, f, grid, devices, timing or {})
        return Workload(
            name=name or f.__name__,
            setup=f,
            params=grid,
            devices=tuple(devices),
            suite=suite,
            tags=tuple(tags),
            skip=skip,
            timing=dict(timing or {}),
        )

    return wrap(fn) if fn is not None else wrap


MAX_PARAM_INT = 2**63 - 1
# the devices a workload may declare: the worker times "cuda..." cases with CUDA events and every other one on the
# host clock, so another name ("tpu", "mps") would be measured as a CPU case, or never (no runner has it)
WORKLOAD_DEVICE = re.compile(r"cpu|cuda(:[0-9]+)?")
WORKLOAD_DEVICES = "'cpu', 'cuda' or 'cuda:N' (a GPU by index, e.g. 'cuda:1')"
_P = inspect.Parameter
_POSITIONAL = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)


def defined_at(fn: Callable[..., object]) -> str:
    """`bench.py:12: `: where the set-up `fn` is defined, to lead a message about it; "" where that is unknown."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    return f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}: " if code is not None else ""


def _not_callable(made: object) -> str:
    if made is None:
        return "its set-up returned None; it must return the callable to time (e.g. `return lambda: step(x)`)."
    return (
        f"its set-up returned {type(made).__name__} {made!r:.40}, not a callable; it must return the callable to "
        "time (e.g. `return lambda: a @ b`, not the result `a @ b`)."
    )


def is_utf8(text: str) -> bool:
    """Whether `text` can be written as UTF-8 (not with a lone UTF-16 surrogate): names and values in case ids."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _validate_values(who: str, key: str, values: object) -> None:
    if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
        raise WorkloadDefinitionError(f"{who}: parameter {key!r} must be a non-empty list of values.")
    bad = [v for v in values if not isinstance(v, PARAM_TYPES) or (isinstance(v, float) and not math.isfinite(v))]
    if bad:
        raise WorkloadDefinitionError(
            f"{who}: parameter {key!r} has a value {bad[0]!r:.60} that is not a str, int, finite float or bool.",
        )
    # an int of 5,000 digits would break the case id, a lone surrogate the report and the results file
    huge = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_PARAM_INT]
    if huge:
        raise WorkloadDefinitionError(
            f"{who}: parameter {key!r} has an integer beyond 64 bits ({huge[0].bit_length()} bits)."
        )
    unencodable = [v for v in values if isinstance(v, str) and not is_utf8(v)]
    if unencodable:
        raise WorkloadDefinitionError(
            f"{who}: parameter {key!r} has a value {unencodable[0]!r} that is not valid Unicode (a lone surrogate)."
        )
    if len(set(values)) != len(values):
        raise WorkloadDefinitionError(f"{who}: parameter {key!r} lists a value twice.")


def _validate(
    who: str, f: SetupFn, grid: Mapping[str, object], devices: Sequence[str], timing: Mapping[str, Any]
) -> None:
    _validate_devices(who, devices)
    for key, values in grid.items():
        if not isinstance(values, Mapping):
            _validate_values(who, key, values)
            continue
        for device in devices:
            if device.split(":")[0] not in values:
                raise WorkloadDefinitionError(f"{who}: parameter {key!r} has no values for device {device!r}.")
        for device, per_device in values.items():
            _validate_values(who, f"{key}[{device}]", per_device)
    unknown = sorted(set(timing) - _timing_fields()) if timing else []
    if unknown:
        raise WorkloadDefinitionError(
            f"{who}: unknown timing setting {unknown[0]!r}.",
            hint=f"known settings: {', '.join(sorted(_timing_fields()))}",
        )
    _validate_timing(who, grid, timing)
    _validate_signature(who, f, grid)


_NAME_BREAKERS = re.compile(r"[\s@\[\],\x00-\x1f\x7f]")  # what would make the case id ambiguous


def _validate_labels(who: str, name: object, suite: object, tags: object) -> None:
    """`name`, `suite` and `tags` of the right types: `suite=3` measured every case, then the results file could not
    be written and the whole run was lost; `tags="gemm"` became four one-letter tags; `name="x@cuda"` made an id
    that `-k @cuda` matched."""
    if name is not None and (not isinstance(name, str) or not name or _NAME_BREAKERS.search(name)):
        raise WorkloadDefinitionError(
            f"{who}: name={name!r:.60} is not a workload name: a non-empty text without spaces, '@', '[', ']' or ','."
        )
    if not isinstance(suite, str) or _NAME_BREAKERS.search(suite):
        raise WorkloadDefinitionError(f"{who}: suite={suite!r:.60} is not a suite name: a text without spaces or '@'.")
    if isinstance(tags, str) or not isinstance(tags, Sequence) or not all(isinstance(t, str) and t for t in tags):
        raise WorkloadDefinitionError(
            f"{who}: tags={tags!r:.60} is not a list of tags (non-empty texts).",
            hint='write tags=["gemm"], not tags="gemm"' if isinstance(tags, str) else None,
        )


def _validate_devices(who: str, devices: Sequence[str]) -> None:
    if not devices or isinstance(devices, str):
        raise WorkloadDefinitionError(f"{who}: 'devices' must be a list naming at least one device.")
    odd = [d for d in devices if not isinstance(d, str) or not d.strip() or not is_utf8(d)]
    if odd:  # `devices=[1]` would end in a traceback where cases are selected
        raise WorkloadDefinitionError(f"{who}: device {odd[0]!r} is not a device name such as 'cpu' or 'cuda:0'.")
    unknown = [d for d in devices if not WORKLOAD_DEVICE.fullmatch(d)]
    if unknown:  # "tpu" was listed, then left out with the hint "pass --device tpu", then run as a CPU case
        near = unknown[0].strip().lower().replace("gpu", "cuda")
        raise WorkloadDefinitionError(
            f"{who}: devices names {unknown[0]!r}, which perfci cannot run a workload on; use {WORKLOAD_DEVICES}.",
            hint=f"did you mean {near!r}?" if WORKLOAD_DEVICE.fullmatch(near) else None,
        )
    if len(set(devices)) != len(devices):
        raise WorkloadDefinitionError(f"{who}: devices lists a device twice.")


def _validate_signature(who: str, f: SetupFn, grid: Mapping[str, object]) -> None:
    """The set-up can be called as the worker calls it, `f(ctx, **params)`: one without `ctx`, or with an argument
    that is no parameter, failed every case at run time, in a message that pointed at perfci's own code."""
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return
    fname, args = getattr(f, "__name__", "setup"), list(sig.parameters.values())
    missing = [k for k in grid if k not in sig.parameters]
    if missing and not any(p.kind is _P.VAR_KEYWORD for p in args):
        raise WorkloadDefinitionError(f"{who}: parameter {missing[0]!r} is not an argument of {fname}{sig}.")
    first = next((p for p in args if p.kind in (*_POSITIONAL, _P.VAR_POSITIONAL)), None)
    if first is None or (first.kind in _POSITIONAL and first.name in grid):
        raise WorkloadDefinitionError(
            f"{who}: the set-up {fname}{sig} does not take the context `ctx` as its first argument; define it as "
            f"`def {fname}({', '.join(['ctx', *grid])}):`, the context first, then the parameters by name."
        )
    try:
        sig.bind(None, **dict.fromkeys(grid))
    except TypeError as exc:
        rest = [p for p in args if p is not first and p.kind not in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD)]
        unfed = [p.name for p in rest if p.default is _P.empty and p.name not in grid]
        call = ", ".join(["ctx", *(f"{k}=..." for k in grid)])
        raise WorkloadDefinitionError(
            f"{who}: the set-up {fname}{sig} takes {unfed[0]!r}, which is no parameter of the workload."
            if unfed
            else f"{who}: the set-up {fname}{sig} cannot be called as {fname}({call}): {exc}.",
            hint="declare it in params=, or give it a default" if unfed else None,
        ) from None


def _validate_timing(who: str, grid: Mapping[str, object], timing: Mapping[str, Any]) -> None:
    """Timing values of the kind and range they need, and GPU modes that exist, in a `timing` dict or a
    `gpu_mode` parameter (a negative budget, a text for a count or an unknown mode failed every case of
    the workload in its worker, with a traceback)."""
    from perfci.profilers.cuda_timing import MODES
    from perfci.profilers.timing import timing_problem

    problem = timing_problem(timing) if timing else None
    if problem is not None:
        raise WorkloadDefinitionError(f"{who}: timing setting {problem}.")
    modes: Any = grid.get("gpu_mode", [])  # a list of values, or one per device (checked above)
    given = [timing["gpu_mode"]] if "gpu_mode" in timing else []
    for values in modes.values() if isinstance(modes, Mapping) else [modes]:
        given += list(values)
    for mode in given:
        if mode not in MODES:
            raise WorkloadDefinitionError(
                f"{who}: unknown GPU timing mode {mode!r}.", hint=f"use one of {', '.join(MODES)}"
            )


def _timing_fields() -> set[str]:
    from perfci.profilers.timing import TimingSettings  # lazily: it pulls in scipy

    return {f.name for f in dataclasses.fields(TimingSettings)}
