"""torch's thread-local modes a pytest-benchmark test's call ran under (`torch.no_grad()`, `torch.inference_mode()`),
recorded when the test hands the call to `benchmark` and entered again when perfci ab times it after the test
(workloads/pytest_capture.py). torch is imported here only where the test had imported it."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TorchModes:
    """torch's thread-local modes a test's call ran under: `with torch.no_grad():` or `torch.inference_mode()`
    around `benchmark(model, x)`. The test's end leaves them; perfci ab enters them again around every timed call
    (`under_modes`), so a model measured without autograd is timed without it (it was timed with autograd on both
    sides: a two-layer MLP's forward read 1.46x its no_grad time at width 64 and batch 1, 1.19x at 256 and 8,
    1.02x at 1024 and 32, benchmarks/torch_modes_cost.py: a change under the 3x of the context check
    (workloads/pytest_capture.py), which let it through)."""

    grad: bool = True
    inference: bool = False

    @property
    def words(self) -> str:
        return "torch.inference_mode()" if self.inference else "torch.no_grad()" if not self.grad else ""


DEFAULT_MODES = TorchModes()


def torch_modes() -> TorchModes | None:
    """The modes now, or None where torch was never imported (a test that does not use it pays no import)."""
    torch = sys.modules.get("torch")
    grad, inference = (getattr(torch, name, None) for name in ("is_grad_enabled", "is_inference_mode_enabled"))
    if not callable(grad) or not callable(inference):  # no torch, or a stand-in a test put in sys.modules
        return None
    return TorchModes(bool(grad()), bool(inference()))


def mode_guard(modes: TorchModes | None) -> contextlib.AbstractContextManager[Any] | None:
    """A context manager that enters `modes` (reusable, made once), or None for torch's defaults."""
    if modes is None or modes == DEFAULT_MODES:
        return None
    import torch

    return torch.inference_mode() if modes.inference else torch.no_grad()


def under_modes(fn: Callable[[], object], modes: TorchModes | None) -> Callable[[], object]:
    """`fn`, or where its test called it under a mode that is not torch's default, `fn` inside that mode at every
    call: one context manager made once and entered per call (1.1-1.3 µs a call on the 2-core VM, on both sides of
    an A/B alike: docs/pytest.md)."""
    guard = mode_guard(modes)
    if guard is None:
        return fn

    def call() -> object:
        with guard:
            return fn()

    return call
