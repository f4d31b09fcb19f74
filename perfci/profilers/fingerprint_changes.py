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
    if not isinstance(gpus, list):  # a fingerprint is free-form in a results file: anything else is not compared
        return None
    return [str(g.get("name", "?")) if isinstance(g, dict) else str(g) for g in gpus]


Change = tuple[str, Any, Any]  # (fingerprint entry, value before, value after)


def _changed(key: str, a: Any, b: Any) -> list[Change]:
    return [] if a is None or b is None or a == b else [(key, a, b)]


def fingerprint_changes(before: dict[str, Any], after: dict[str, Any]) -> tuple[list[Change], list[Change]]:
    """(hardware changes, software changes) between two fingerprints, each (entry, before, after)."""
    hardware = [c for k in HARDWARE_KEYS for c in _changed(k, before.get(k), after.get(k))]
    hardware += _changed("gpus", _gpu_names(before), _gpu_names(after))
    software = [c for k in SOFTWARE_KEYS for c in _changed(k, before.get(k), after.get(k))]
    libs_a, libs_b = before.get("libraries"), after.get("libraries")
    libs_a, libs_b = (libs if isinstance(libs, dict) else {} for libs in (libs_a, libs_b))
    for name in sorted(set(libs_a) & set(libs_b)):
        software += _changed(name, libs_a[name], libs_b[name])
    return hardware, software


def fingerprint_differences(baseline: dict[str, Any], candidate: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(hardware differences, software differences), each a list of one-line descriptions."""
    hardware, software = fingerprint_changes(baseline, candidate)
    return [_text(c) for c in hardware], [_text(c) for c in software]


def _text(change: Change) -> str:
    key, a, b = change
    return f"{key}: {a} (baseline) vs {b} (candidate)"


def change_text(changes: list[Change]) -> str:
    """Changes as one short line, e.g. "torch 2.4.0 -> 2.5.0; gpu_driver 550.54 -> 560.35"."""
    return "; ".join(f"{key} {a} -> {b}" for key, a, b in changes)
