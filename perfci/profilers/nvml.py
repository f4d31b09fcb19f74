"""NVIDIA GPU inventory and telemetry through NVML (nvidia-ml-py). Degrades to an explanation without a GPU."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


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
