"""Are two runs comparable? The fingerprint rule.

- Hardware differences (CPU model, logical cores, machine architecture, GPU models) make timings of two runs
  incomparable: `perfci compare` refuses (exit 2) unless `--allow-mismatch`, which turns them into warnings.
- Software differences (Python, torch/ORT/numpy/triton versions, GPU and CUDA driver, OS) are what a gate is
  often *meant* to catch (a library upgrade that slows a kernel), so they are shown as warnings and the
  comparison goes ahead.
Keys missing on either side are not counted as differences (older results files may lack them).
"""

from __future__ import annotations

from typing import Any

HARDWARE_KEYS = ("machine", "cpu_model", "cpu_logical_cores")
SOFTWARE_KEYS = ("python", "os", "gpu_driver", "cuda_driver")


def _gpu_names(fp: dict[str, Any]) -> list[str] | None:
    gpus = fp.get("gpus")
    if gpus is None:
        return None
    return [str(g.get("name", "?")) if isinstance(g, dict) else str(g) for g in gpus]


def _diff(key: str, a: Any, b: Any) -> str | None:
    if a is None or b is None or a == b:
        return None
    return f"{key}: {a} (baseline) vs {b} (candidate)"


def fingerprint_differences(baseline: dict[str, Any], candidate: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(hardware differences, software differences), each a list of one-line descriptions."""
    hardware = [d for k in HARDWARE_KEYS if (d := _diff(k, baseline.get(k), candidate.get(k)))]
    gpus = _diff("gpus", _gpu_names(baseline), _gpu_names(candidate))
    if gpus:
        hardware.append(gpus)
    software = [d for k in SOFTWARE_KEYS if (d := _diff(k, baseline.get(k), candidate.get(k)))]
    libs_a, libs_b = baseline.get("libraries") or {}, candidate.get("libraries") or {}
    for name in sorted(set(libs_a) & set(libs_b)):
        d = _diff(name, libs_a[name], libs_b[name])
        if d:
            software.append(d)
    return hardware, software
