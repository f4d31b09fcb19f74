"""Work per call (FLOPs and bytes) for bandwidth and FLOP/s: declared by the workload, or derived.

Derivation, used only when the workload declares nothing:
- bytes: sizes of the tensors the timed callable closes over (its inputs, found through its closure and one
  level of nested closures and bound `self` modules' parameters are NOT counted) plus the tensors it returns
  (its outputs). This is the compulsory traffic of a kernel that reads each input once and writes each output
  once; it under-counts kernels that re-read data and over-counts inputs a call does not touch.
- FLOPs: `torch.utils.flop_counter.FlopCounterMode` over one call. It counts matmul/conv/attention-like ops
  it knows; it misses scaled-dot-product attention on CPU (the math fallback is not counted as such) and the
  fused multi-head attention fast path under `no_grad`; elementwise ops count 0. A derived count of 0 is
  reported as unknown (None), never as 0 FLOP/s.
  The counting call runs with `torch.compiler.set_stance("force_eager")`: a `torch.compile`d function called
  once under FlopCounterMode falls back to eager *for good* (measured on an H200, torch 2.11: the compiled
  tanh-GELU went from 510 us to 5482 us per call after one counted call), so counting would otherwise change
  the code being measured. Without `set_stance` (torch < 2.6), FLOPs are not derived once dynamo is loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def _tensors(obj: Any, torch: Any, depth: int = 0) -> Iterable[Any]:
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, list | tuple) and depth < 3:
        for item in obj:
            yield from _tensors(item, torch, depth + 1)
    elif isinstance(obj, dict) and depth < 3:
        for item in obj.values():
            yield from _tensors(item, torch, depth + 1)


def _closure_values(fn: Callable[[], object], depth: int = 0) -> Iterable[Any]:
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # empty cell
            continue
        if callable(value) and hasattr(value, "__closure__") and depth < 1:
            yield from _closure_values(value, depth + 1)
        else:
            yield value


def derive_bytes(fn: Callable[[], object], output: object, torch: Any) -> float | None:
    seen: dict[int, int] = {}
    for value in [*_closure_values(fn), output]:
        for t in _tensors(value, torch):
            seen[id(t)] = t.numel() * t.element_size()
    total = sum(seen.values())
    return float(total) if total else None


def derive_flops(fn: Callable[[], object], torch: Any) -> float | None:
    import contextlib
    import sys

    from torch.utils.flop_counter import FlopCounterMode

    set_stance = getattr(getattr(torch, "compiler", None), "set_stance", None)
    if set_stance is None and "torch._dynamo" in sys.modules:
        return None  # a compiled callable would be switched to eager for good (module docstring)
    eager = set_stance("force_eager") if set_stance is not None else contextlib.nullcontext()
    with eager, FlopCounterMode(display=False) as counter:
        fn()
    total = counter.get_total_flops()
    return float(total) if total else None


def resolve_work(
    fn: Callable[[], object], declared_flops: float | None, declared_bytes: float | None, torch: Any | None
) -> tuple[float | None, float | None, dict[str, str]]:
    """(flops, bytes, sources) where each source is 'declared', 'derived' or 'unknown'."""
    sources = {
        "flops": "declared" if declared_flops else "unknown",
        "bytes": "declared" if declared_bytes else "unknown",
    }
    flops, nbytes = declared_flops, declared_bytes
    if torch is None or (flops and nbytes):
        return flops, nbytes, sources
    if not nbytes:
        nbytes = derive_bytes(fn, fn(), torch)
        sources["bytes"] = "derived" if nbytes else "unknown"
    if not flops:
        try:
            flops = derive_flops(fn, torch)
        except Exception:  # the counter cannot trace every callable (e.g. ONNX Runtime sessions)
            flops = None
        sources["flops"] = "derived" if flops else "unknown"
    return flops, nbytes, sources
