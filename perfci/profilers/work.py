"""Work per call (FLOPs and bytes) for bandwidth and FLOP/s: declared by the workload, or derived.

Derivation, used only when the workload declares nothing:
- bytes: one call's traffic, counted operator by operator under a torch dispatch mode (`_ByteCounter`): each
  operator's input and output tensors, a view by its own size (numel * element size), never the tensor it views.
  Operators that move no data (views, `empty`, `detach`, metadata) count nothing. Tensors the callable merely
  holds are not counted: a call that sums 1,000 elements of a 400 MB tensor moves 4 KB. An in-place operator
  counts its tensor as read and written. Cache reuse inside an operator and operators below the dispatcher
  (ONNX Runtime, Triton kernels launched directly) are invisible to it; the latter derive nothing (unknown).
- FLOPs: torch's FLOP formulas (`torch.utils.flop_counter.flop_registry`, the ones `FlopCounterMode` uses) summed
  over one call's operators under a dispatch mode of our own (`_flop_counter`: `FlopCounterMode` itself imports
  dynamo, seconds of every worker's start). It counts matmul/conv/attention-like ops
  it knows; it misses scaled-dot-product attention on CPU (the math fallback is not counted as such) and the
  fused multi-head attention fast path under `no_grad`; elementwise ops count 0. A derived count of 0 is
  reported as unknown (None), never as 0 FLOP/s.
  The counting call runs with `torch.compiler.set_stance("force_eager")`: a `torch.compile`d function called
  once under FlopCounterMode falls back to eager *for good* (measured on an H200, torch 2.11: the compiled
  tanh-GELU went from 510 us to 5482 us per call after one counted call), so counting would otherwise change
  the code being measured. Without `set_stance` (torch < 2.6), FLOPs are not derived once dynamo is loaded.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable
from typing import Any

# operators that allocate or describe memory without reading or writing its data
_NO_TRAFFIC = frozenset({"empty", "empty_strided", "empty_like", "detach", "lift_fresh", "_to_copy_meta", "size"})


def _bytes_of(obj: Any, torch: Any) -> int:
    if isinstance(obj, torch.Tensor):
        return int(obj.numel() * obj.element_size())
    if isinstance(obj, list | tuple):
        return sum(_bytes_of(x, torch) for x in obj)
    return 0


def _dispatch_mode_base(torch: Any) -> Any:
    """torch's TorchDispatchMode as the base of our counting modes (each with a `total` from 0), made so that they
    do not load dynamo: torch wraps a mode's `__torch_dispatch__` so that dynamo never traces it, and the wrapper
    imports dynamo on the first operator (3.4 s on a CPU runner, more on a GPU image without a bytecode cache).
    Nothing can be traced while dynamo is not loaded, so the wrapper is skipped then; once it is loaded (a
    compiled callable), torch decides as usual. Like any mode that does not declare support for higher-order
    operators, they make a call that uses one fail, and its work is then unknown (`resolve_work`)."""
    import sys

    from torch.utils._python_dispatch import TorchDispatchMode

    class _Mode(TorchDispatchMode):  # type: ignore[misc,no-untyped-call]
        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self.total = 0

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            skip = getattr(super(), "_should_skip_dynamo", None)
            return "torch._dynamo" in sys.modules and (skip() if skip is not None else True)

    return _Mode


def _counter(torch: Any) -> Any:
    class _ByteCounter(_dispatch_mode_base(torch)):  # type: ignore[misc]
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if not func.is_view and func.overloadpacket.__name__ not in _NO_TRAFFIC:
                moved = [*args, *kwargs.values(), out]
                self.total += sum(_bytes_of(x, torch) for x in moved)
            return out

    return _ByteCounter()


def _eager(torch: Any) -> Any:
    """A context that keeps a `torch.compile`d callable eager for the counting call (module docstring); None
    where that cannot be done once dynamo is loaded (torch < 2.6)."""
    import contextlib
    import sys

    if "torch._dynamo" not in sys.modules:
        # nothing was compiled in this process (torch.compile loads dynamo); asking for the stance would load it
        # here, 3 s of imports in every worker on a CPU runner and more on a GPU image without bytecode cache
        return contextlib.nullcontext()
    set_stance = getattr(getattr(torch, "compiler", None), "set_stance", None)
    if set_stance is None:
        return None if "torch._dynamo" in sys.modules else contextlib.nullcontext()
    return set_stance("force_eager")


def derive_bytes(fn: Callable[[], object], torch: Any) -> float | None:
    """Bytes one call of `fn` moves, summed over its torch operators (module docstring); None when unknown."""
    eager = _eager(torch)
    if eager is None:
        return None
    counter = _counter(torch)
    with eager, counter:
        fn()
    return float(counter.total) if counter.total else None


def _flop_counter(torch: Any) -> Any:
    """A dispatch mode that sums torch's own FLOP formulas (`torch.utils.flop_counter.flop_registry`) over the
    operators of a call, decomposing operators that have no formula, as `FlopCounterMode` does. Not
    `FlopCounterMode` itself: entering it imports dynamo (its methods are wrapped in `_disable_dynamo`), 3.4 s of
    every worker's start on a CPU runner (docs/measurement.md)."""
    from torch.utils.flop_counter import flop_registry

    device_op = torch.ops.prim.device.default

    class _FlopCounter(_dispatch_mode_base(torch)):  # type: ignore[misc]
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if func not in flop_registry and func is not device_op:
                with self:
                    decomposed = func.decompose(*args, **kwargs)
                if decomposed is not NotImplemented:
                    return decomposed
            out = func(*args, **kwargs)
            formula = flop_registry.get(func._overloadpacket)
            if formula is not None:
                self.total += int(formula(*args, **kwargs, out_val=out))
            return out

    return _FlopCounter()


def derive_flops(fn: Callable[[], object], torch: Any) -> float | None:
    eager = _eager(torch)
    if eager is None:
        return None  # a compiled callable would be switched to eager for good (module docstring)
    counter = _flop_counter(torch)
    with eager, counter:
        fn()
    return float(counter.total) if counter.total else None


MAX_DECLARED_WORK = 1e30  # per call: far above any real kernel; keeps every derived rate a finite float


def checked_work(name: str, value: object) -> float | None:
    """A declared amount of work (`ctx.flops`, `ctx.bytes`, the pytest plugin's `flops=`) as a float; None stays
    None. TypeError for what is not a real number (numpy's scalars are), ValueError for NaN, infinity, a negative
    value or one past MAX_DECLARED_WORK; the message starts with `name` (NaN or an int of 400 digits
    stopped the results file from being written at all, and 1e308 overflowed FLOP/s into a null that perfci's
    own reader refused)."""
    __tracebackhide__ = True  # in a pytest test, the failure points at the user's call
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, not {value!r:.60}")
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        number = math.inf
    if not 0.0 <= number <= MAX_DECLARED_WORK:  # NaN fails too
        raise ValueError(f"{name}{value!r:.40} is not a number from 0 to {MAX_DECLARED_WORK:g} (per call)")
    return number


def resolve_work(
    fn: Callable[[], object], declared_flops: float | None, declared_bytes: float | None, torch: Any | None
) -> tuple[float | None, float | None, dict[str, str]]:
    """(flops, bytes, sources) where each source is 'declared', 'derived' or 'unknown'."""
    declared_flops = checked_work("ctx.flops=", declared_flops)
    declared_bytes = checked_work("ctx.bytes=", declared_bytes)
    sources = {
        "flops": "declared" if declared_flops else "unknown",
        "bytes": "declared" if declared_bytes else "unknown",
    }
    flops, nbytes = declared_flops, declared_bytes
    if torch is None or (flops and nbytes):
        return flops, nbytes, sources
    if not nbytes:
        try:
            nbytes = derive_bytes(fn, torch)
        except Exception as exc:  # an operator the counting mode cannot pass through
            _raise_if_the_workloads_own(exc)
            nbytes = None
        sources["bytes"] = "derived" if nbytes else "unknown"
    if not flops:
        try:
            flops = derive_flops(fn, torch)
        except Exception as exc:  # the counter cannot trace every callable (e.g. ONNX Runtime sessions)
            _raise_if_the_workloads_own(exc)
            flops = None
        sources["flops"] = "derived" if flops else "unknown"
    return flops, nbytes, sources


def _raise_if_the_workloads_own(exc: Exception) -> None:
    """A counting call is a call of the workload: an exception raised by the workload's own code (its innermost
    frame outside torch and this module) is the case's error, not a count that could not be made. Taken for the
    counter's, a callable that failed on its second call was recorded `ok` (its later calls passed)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = tb.tb_frame.f_code.co_filename if tb is not None else __file__
    if where == __file__ or f"{os.sep}torch{os.sep}" in where:
        return
    raise exc
