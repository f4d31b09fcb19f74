"""GPU telemetry per sample through NVML: clocks, clock-event (throttle) reasons, power, temperature, energy.

`NvmlProbe` is built from an `nvml` module object (pynvml or a test fake) and a device index; when NVML is not
there, `open_probe` returns None and timing goes on without telemetry.

Throttle rule (documented in docs/measurement.md): a sample is *flagged* when any clock-event reason other than
"GPU idle", "applications clocks setting" or "display clocks" was active when it started. Samples flagged for a
thermal or hardware slowdown (HW slowdown, HW thermal, HW power brake, SW thermal) are *dropped* when at least
`min_keep` unflagged samples remain; software power capping is only flagged, because it is the steady state of
a sustained heavy kernel and dropping it would bias the result towards bursts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# NVML clocks-event reason bits (nvmlClocksEventReason*/nvmlClocksThrottleReason*)
REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clocks_setting",
}
BENIGN = {"gpu_idle", "applications_clocks_setting", "display_clocks_setting"}
DROP = {"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}


def reason_names(mask: int) -> list[str]:
    return [name for bit, name in REASONS.items() if mask & bit]


@dataclass
class NvmlProbe:
    nvml: Any
    handle: Any

    def _try(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(self.handle, *args)
        except Exception:  # a field this GPU or driver does not expose
            return None

    def process_memory(self, pid: int) -> int | None:
        """Device memory NVML charges to process `pid` (context: it includes the CUDA context and the
        allocator's reserved pool); None where NVML does not say."""
        procs = self._try(self.nvml.nvmlDeviceGetComputeRunningProcesses) or ()
        used = [getattr(p, "usedGpuMemory", None) for p in procs if getattr(p, "pid", None) == pid]
        return int(used[0]) if used and used[0] is not None else None

    def snapshot(self) -> dict[str, Any]:
        n = self.nvml
        mask = self._try(n.nvmlDeviceGetCurrentClocksThrottleReasons)
        power = self._try(n.nvmlDeviceGetPowerUsage)
        mem = self._try(n.nvmlDeviceGetMemoryInfo)
        return {
            "sm_clock_mhz": self._try(n.nvmlDeviceGetClockInfo, n.NVML_CLOCK_SM),
            "mem_clock_mhz": self._try(n.nvmlDeviceGetClockInfo, n.NVML_CLOCK_MEM),
            "power_w": power / 1000.0 if power is not None else None,
            "temperature_c": self._try(n.nvmlDeviceGetTemperature, n.NVML_TEMPERATURE_GPU),
            "throttle": reason_names(mask) if mask is not None else None,
            "energy_mj": self._try(n.nvmlDeviceGetTotalEnergyConsumption),
            "memory_used_bytes": int(mem.used) if mem is not None else None,
        }


def open_probe(device_index: int = 0) -> NvmlProbe | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        return NvmlProbe(pynvml, pynvml.nvmlDeviceGetHandleByIndex(device_index))
    except Exception:
        return None


def throttle_flags(snapshots: Sequence[dict[str, Any]]) -> tuple[list[bool], list[bool]]:
    """Per sample: (flagged, droppable)."""
    flagged, droppable = [], []
    for snap in snapshots:
        active = set(snap.get("throttle") or ()) - BENIGN
        flagged.append(bool(active))
        droppable.append(bool(active & DROP))
    return flagged, droppable


def slice_throttle(before: dict[str, Any], after: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The clock-event reasons seen around a profiled slice (snapshots before and after it), other than the
    benign ones, and those of them that leave the slice out (a thermal or hardware slowdown, `DROP`): a power
    cap lowers the clock for as long as the load lasts, and the comparison in cycles allows for it
    (profilers/device_time.in_cycles)."""
    seen = set(before.get("throttle") or ()) | set(after.get("throttle") or ())
    active = sorted(seen - BENIGN)
    return active, [r for r in active if r in DROP]


def apply_throttle_rule(
    samples: Sequence[float], snapshots: Sequence[dict[str, Any]], min_keep: int
) -> tuple[tuple[float, ...], int, int]:
    """Drop samples taken during thermal/hardware slowdowns when enough others remain.

    Returns (kept samples, number flagged, number dropped).
    """
    flagged, droppable = throttle_flags(snapshots)
    keep = [s for s, d in zip(samples, droppable, strict=True) if not d]
    if len(keep) >= min_keep and len(keep) < len(samples):
        return tuple(keep), sum(flagged), len(samples) - len(keep)
    return tuple(samples), sum(flagged), 0


def summarize(
    snapshots: Sequence[dict[str, Any]], start: dict[str, Any], end: dict[str, Any], calls: int
) -> dict[str, Any]:
    """Per-sample series plus energy over the sampling phase and per call."""
    series = {
        key: [s.get(key) for s in snapshots]
        for key in ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c", "throttle")
    }
    out: dict[str, Any] = {"gpu": series}
    e0, e1 = start.get("energy_mj"), end.get("energy_mj")
    if e0 is not None and e1 is not None and e1 > e0 and calls > 0:
        out["energy_j"] = (e1 - e0) / 1000.0
        out["energy_per_call_j"] = (e1 - e0) / 1000.0 / calls
    if end.get("memory_used_bytes") is not None:
        out["nvml_memory_used_bytes"] = end["memory_used_bytes"]
    return out


def energy_block(
    probe: NvmlProbe, run_block: Any, iterations: int, window_s: float, clock: Any
) -> tuple[dict[str, Any], dict[str, Any], int]:
    """Run `run_block(iterations)` back to back for `window_s`; return (start, end) snapshots and calls made.

    The NVML energy counter (mJ) updates in steps of tens of milliseconds, so the window must be long
    (default 0.5 s) for the per-call figure to be accurate to a few percent.
    """
    start = probe.snapshot()
    t_end = clock() + window_s
    calls = 0
    while clock() < t_end:
        run_block(iterations)
        calls += iterations
    end = probe.snapshot()
    return start, end, calls
