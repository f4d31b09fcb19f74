"""NVIDIA GPU inventory and telemetry through NVML (nvidia-ml-py). Degrades to an explanation without a GPU."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from perfci.errors import UsageError


@dataclass(frozen=True)
class GpuInventory:
    gpus: tuple[dict[str, Any], ...] = ()
    driver: str | None = None
    cuda_driver: str | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def gpu_inventory() -> GpuInventory:
    try:
        import pynvml
    except ImportError:
        return GpuInventory(note="nvidia-ml-py is not installed; GPU state unknown")
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return GpuInventory(note=f"no NVIDIA GPU available (NVML: {exc})")
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            gpus.append(_device_facts(pynvml, h, i))
        return GpuInventory(
            gpus=tuple(gpus),
            driver=driver,
            cuda_driver=f"{cuda // 1000}.{(cuda % 1000) // 10}",
            note="" if gpus else "NVML found no GPU",
        )
    finally:
        pynvml.nvmlShutdown()


def _device_facts(pynvml: Any, h: Any, index: int) -> dict[str, Any]:
    facts: dict[str, Any] = {"index": index, "name": _text(pynvml.nvmlDeviceGetName(h))}
    readers: dict[str, Callable[[], Any]] = {
        "memory_total_bytes": lambda: int(pynvml.nvmlDeviceGetMemoryInfo(h).total),
        "power_limit_w": lambda: pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000.0,
        "max_sm_clock_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
        "max_mem_clock_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM),
        "uuid": lambda: _text(pynvml.nvmlDeviceGetUUID(h)),
    }
    for key, read in readers.items():
        try:
            facts[key] = read()
        except Exception:  # a field this GPU or driver does not expose
            facts[key] = None
    return facts


# --- --lock-clocks: the SM clock held for the run, restored afterwards --------------------------------------------


@dataclass(frozen=True)
class ClockLock:
    """The SM clock locked on each GPU (index -> MHz) by `lock_sm_clocks`; `release` restores the driver's
    default (its own clock management)."""

    nvml: Any
    locked: tuple[tuple[int, int], ...]

    def words(self) -> str:
        clocks = sorted({mhz for _, mhz in self.locked})
        return f"SM clock locked at {', '.join(f'{c:,} MHz' for c in clocks)} on {len(self.locked)} GPU(s)"

    def release(self) -> None:
        """Reset every locked GPU's clocks; what cannot be reset is left (the run is over either way)."""
        for index, _ in self.locked:
            try:
                self.nvml.nvmlDeviceResetGpuLockedClocks(self.nvml.nvmlDeviceGetHandleByIndex(index))
            except Exception:  # nothing better to do at the end of a run than to try the others
                continue
        try:
            self.nvml.nvmlShutdown()
        except Exception:
            return


LOCK_HINT = "run as root on a GPU whose driver allows locked clocks (nvidia-smi -lgc), or leave out --lock-clocks"


def _lock_target(nvml: Any, handle: Any) -> int:
    """The clock to lock at: the GPU's default applications SM clock (its base clock, which it holds under a
    sustained load), else its maximum SM clock."""
    try:
        return int(nvml.nvmlDeviceGetDefaultApplicationsClock(handle, nvml.NVML_CLOCK_SM))
    except Exception:
        return int(nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM))


def lock_sm_clocks(nvml: Any = None) -> ClockLock:
    """Lock every GPU's SM clock (nvmlDeviceSetGpuLockedClocks, min = max = `_lock_target`). Refuses with one
    UsageError sentence where NVML is missing, there is no GPU, or the driver does not allow it (no permission,
    not supported); GPUs locked before a refusal are reset first, so a refusal changes no setting."""
    if nvml is None:
        try:
            import pynvml
        except ImportError:
            raise UsageError("--lock-clocks needs NVML (nvidia-ml-py), which is not installed.", LOCK_HINT) from None
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except Exception as exc:
        raise UsageError(f"--lock-clocks: no NVIDIA GPU to lock (NVML: {exc}).", LOCK_HINT) from None
    done: list[tuple[int, int]] = []
    try:
        count = int(nvml.nvmlDeviceGetCount())
        if count == 0:
            raise UsageError("--lock-clocks: NVML found no GPU.", LOCK_HINT)
        for index in range(count):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            mhz = _lock_target(nvml, handle)
            nvml.nvmlDeviceSetGpuLockedClocks(handle, mhz, mhz)
            done.append((index, mhz))
    except UsageError:
        ClockLock(nvml, tuple(done)).release()
        raise
    except Exception as exc:
        ClockLock(nvml, tuple(done)).release()
        raise UsageError(f"--lock-clocks: the driver refused to lock the SM clock ({exc}).", LOCK_HINT) from None
    return ClockLock(nvml, tuple(done))


@contextlib.contextmanager
def locked_sm_clocks(enabled: bool, say: Callable[[str], None], nvml: Any = None) -> Iterator[ClockLock | None]:
    """`--lock-clocks`: the SM clocks locked for the block and restored after it (also when it raises); nothing
    is touched when not `enabled`. `say` gets one line when the clocks are locked and one when they are restored."""
    if not enabled:
        yield None
        return
    lock = lock_sm_clocks(nvml)
    say(f"note: {lock.words()} for this run; restored when it ends.")
    try:
        yield lock
    finally:
        lock.release()
        say("note: the GPU's clocks are back under the driver's control.")
