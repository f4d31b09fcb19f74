"""A case's own memory, measured inside a worker that holds several cases (docs/measurement.md, "Memory").

`memory.host`: bytes resident after the case's set-up, plus the largest transient during one call, both above the
worker's state just before the set-up. `memory.device`: the same from torch's CUDA allocator (`memory_allocated`
before and after set-up; `max_memory_allocated` over one call after `reset_peak_memory_stats`).

Why this is the case's own although other cases live in the same process:
- the runtime's lazy initialisation (torch's thread pools, the first use of its kernels, the dispatch machinery
  perfci itself uses, cuBLAS's workspace) happens once in `warm_runtime`, before the first case is measured;
- resident memory adds up: the cases set up earlier stay as they are while this one is set up and called;
- before each case the C heap's free pages are handed back to the OS (`malloc_trim`): the workers run with a
  trim threshold of 4 GiB, so without this a case could reuse pages an earlier case freed and look smaller; and
  again after its set-up, so that what the set-up allocated and freed (a model's CPU copy, moved to the GPU) is
  not counted as what it holds;
- the transient is the RSS high-water mark (reset just before the call) over the RSS just before it.
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfci.profilers import memory

_warmed: set[str] = set()
_IMPORTS_TORCH = re.compile(r"^\s*(import torch\b|from torch\b)", re.MULTILINE)


def malloc_trim() -> bool:
    """Give the C heap's free pages back to the OS (glibc); False where there is no such call."""
    try:
        return bool(ctypes.CDLL(None).malloc_trim(0))
    except (OSError, AttributeError):
        return False


def torch_for(setup: Callable[..., object]) -> Any | None:
    """torch, imported now when the workload's source file imports it (set-ups often import it inside, and the
    import must not be charged to the first case that does); None for a workload that does not use torch."""
    if "torch" not in sys.modules:
        try:
            source = Path(inspect.getsourcefile(setup) or "").read_text("utf-8")
        except (OSError, TypeError):
            return None
        if not _IMPORTS_TORCH.search(source):
            return None
        try:
            importlib.import_module("torch")
        except ImportError:
            return None
    return sys.modules["torch"]


def warm_runtime(torch: Any, device: str) -> None:
    """Initialise, once per process and device kind, what torch sets up lazily on first use, so that no case is
    charged for it: thread pools, the first kernels of each common kind, perfci's counting modes and, on a GPU,
    the CUDA context and cuBLAS's workspace."""
    kind = "cuda" if device.startswith("cuda") else "cpu"
    if torch is None or kind in _warmed:
        return
    importlib.import_module("torch.utils._python_dispatch")  # profilers/work.py counts bytes with it
    importlib.import_module("torch.utils.flop_counter")

    x = torch.ones(256, 256, device=device)
    y = (x @ x).softmax(-1).add_(1.0).sum()
    _ = torch.randn(256, device=device).float().mean() + y
    # A module's first forward, in inference mode: nn.Linear (a product with a bias) and GELU. The BLAS sizes its
    # buffers by the shapes it meets: a product of few rows into 2,048 columns reached what the default suite's
    # MLPs need. Without this, 5.5-6.2 MiB went to whichever MLP case ran first in its worker, and A/A memory
    # intervals read 0.57x..1.76x (docs/measurement.md).
    a, w, b = (torch.ones(*shape, device=device) for shape in ((8, 2048), (2048, 2048), (2048,)))
    with torch.inference_mode():
        torch.nn.functional.gelu(torch.nn.functional.linear(a, w, b))
        torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU()).to(device)(torch.ones(2, 16, device=device))
    if kind == "cuda":
        torch.cuda.synchronize()
    _warmed.add(kind)


@dataclass
class HostMemory:
    """RSS bookkeeping for one case; every reader is injectable (tests)."""

    rss: Callable[[], int] = memory.current_rss
    peak: Callable[[], int] = memory.peak_rss
    reset_peak: Callable[[], bool] = memory.reset_peak_rss
    trim: Callable[[], bool] = malloc_trim
    before: int = 0
    after_setup: int = 0
    transient: int | None = None
    _level: int = 0
    _resettable: bool = False

    def start(self) -> None:
        gc.collect()
        self.trim()
        self.before = self.rss()

    def set_up(self) -> None:
        # what the set-up freed is not its own: below the workers' mmap threshold (engine/runner.py) freed pages
        # stay in the C heap, so a model made on the CPU and moved to the GPU read its whole CPU copy as host memory
        gc.collect()
        self.trim()
        self.after_setup = self.rss()

    def before_call(self) -> None:
        gc.collect()
        self._level = self.rss()
        self._resettable = self.reset_peak()  # False (not Linux): resident only

    def after_call(self) -> None:
        if self._resettable:
            self.transient = max(0, self.peak() - self._level)

    def telemetry(self) -> dict[str, int]:
        resident = max(0, self.after_setup - self.before)
        out = {"memory_host_bytes": resident + (self.transient or 0), "memory_host_resident_bytes": resident}
        if self.transient is not None:
            out["memory_host_transient_bytes"] = self.transient
        return out


@dataclass
class DeviceMemory:
    """The same on a CUDA device, from torch's caching allocator (tensors and workspaces the case allocates,
    not the allocator's reserved pool). `torch` may be a fake (tests/fakes.py)."""

    torch: Any
    before: int = 0
    after_setup: int = 0
    transient: int = 0
    _level: int = 0

    def _allocated(self) -> int:
        self.torch.cuda.synchronize()
        return int(self.torch.cuda.memory_allocated())

    def start(self) -> None:
        self.before = self._allocated()

    def set_up(self) -> None:
        self.after_setup = self._allocated()

    def before_call(self) -> None:
        self._level = self._allocated()
        self.torch.cuda.reset_peak_memory_stats()

    def after_call(self) -> None:
        self.torch.cuda.synchronize()
        self.transient = max(0, int(self.torch.cuda.max_memory_allocated()) - self._level)

    def telemetry(self) -> dict[str, int]:
        resident = max(0, self.after_setup - self.before)
        return {
            "memory_device_bytes": resident + self.transient,
            "memory_device_resident_bytes": resident,
            "memory_device_transient_bytes": self.transient,
        }


@dataclass
class CaseMemory:
    """Host and (for CUDA cases) device memory of one case: `start()` before its set-up, `set_up()` after it,
    `call(fn)` for one call; `telemetry()` for the round."""

    host: HostMemory
    device: DeviceMemory | None = None

    def start(self) -> None:
        self.host.start()
        if self.device is not None:
            self.device.start()

    def set_up(self) -> None:
        self.host.set_up()
        if self.device is not None:
            self.device.set_up()

    def call(self, fn: Callable[[], object]) -> None:
        """One call of the case with both high-water marks reset just before it."""
        if self.device is not None:
            self.device.before_call()
        self.host.before_call()
        fn()
        if self.device is not None:
            self.device.after_call()
        self.host.after_call()

    def telemetry(self) -> dict[str, int]:
        out = self.host.telemetry()
        if self.device is not None:
            out.update(self.device.telemetry())
        return out


def case_memory(device: str) -> CaseMemory:
    """The probe for a case on `device` (torch must be imported for a CUDA case)."""
    cuda = device.startswith("cuda") and "torch" in sys.modules
    return CaseMemory(HostMemory(), DeviceMemory(sys.modules["torch"]) if cuda else None)
