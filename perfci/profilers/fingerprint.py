"""Runner fingerprint: what decides whether two results are comparable."""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path
from typing import Any

from perfci.profilers.nvml import gpu_inventory

LIBRARIES = ("torch", "onnxruntime", "numpy", "triton")


def cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def library_versions() -> dict[str, str | None]:
    from importlib import metadata  # here: 20 ms of imports that only a run's fingerprint needs

    versions: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def fingerprint() -> dict[str, Any]:
    import psutil

    inv = gpu_inventory()
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = None
    return {
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "python": platform.python_version(),
        "cpu_model": cpu_model(),
        "cpu_physical_cores": psutil.cpu_count(logical=False),
        "cpu_logical_cores": psutil.cpu_count(logical=True),
        "cpu_affinity_cores": affinity,
        "memory_total_bytes": int(psutil.virtual_memory().total),
        "libraries": library_versions(),
        "gpus": list(inv.gpus),
        "gpu_driver": inv.driver,
        "cuda_driver": inv.cuda_driver,
        "gpu_note": inv.note,
    }


def runner_name(fp: dict[str, Any]) -> str:
    """A default runner class name derived from the fingerprint, e.g. `cpu-amd-epyc-7b13-2c` or `gpu-nvidia-h200`."""
    gpus = fp.get("gpus") or []
    if gpus:
        base = f"gpu-{gpus[0].get('name', 'unknown')}"
    else:
        base = f"cpu-{fp.get('cpu_model', 'unknown')}-{fp.get('cpu_logical_cores', '')}c"
    slug = re.sub(r"[^a-z0-9]+", "-", base.lower()).strip("-")
    return re.sub(r"-(processor|cpu|r|tm)(?=-|$)", "", slug)[:80]
