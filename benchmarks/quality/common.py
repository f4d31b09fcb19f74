"""Shared helpers of the quality benchmarks: run perfci in subprocesses, describe the machine, write docs."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "quality"
RESULTS = ROOT / ".perfci" / "quality"  # raw rows stay out of the tree (.gitignore)

# Two commits of one workload file. Work per call is `k` 32x32 matrix products (numpy, one BLAS thread): the
# head revision multiplies k by the case's factor exactly (k = 100 -> 102, 103, 105, 110), so the slowdown is
# in the work itself, not a sleep, and has no rounding error. Two cases are untouched.
WORKLOAD = """\
import perfci

FAST = {{"warmup_s": 0.02, "min_samples": 5, "budget_s": {budget}, "min_sample_s": 0.0005}}
FACTORS = {factors}
KERNEL = "{kernel}"  # numpy: 32x32 np.dot; torch: 64x64 float32 torch.mm (the speed reference needs torch)


@perfci.workload(params={{"case": list(FACTORS)}}, timing=FAST)
def injected(ctx, case):
    if KERNEL == "torch":
        import torch

        g = torch.Generator().manual_seed(ctx.seed)
        a, b = torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g)
        dot = torch.mm
    else:
        import numpy as np

        rng = np.random.default_rng(ctx.seed)
        a = rng.standard_normal((32, 32))
        b = rng.standard_normal((32, 32))
        dot = np.dot
    k = round(100 * FACTORS[case])

    def work():
        for _ in range(k):
            dot(a, b)

    return work
"""
# What else ran on the machine during a benchmark, written into its page (set by whoever starts it).
CONTEXT = os.environ.get("PERFCI_BENCH_CONTEXT", "Nothing was isolated or pinned beyond what perfci itself does.")
CASES = {"same1": 1.0, "same2": 1.0, "f102": 1.02, "f103": 1.03, "f105": 1.05, "f110": 1.10}


def sh(args: list[str], cwd: Path, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def perfci(args: list[str], cwd: Path, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    return sh([sys.executable, "-m", "perfci", *args], cwd, timeout)


def make_injected_repo(path: Path, budget: float = 0.15, kernel: str = "numpy") -> Path:
    """A git repo with two commits: v1 (every case k = 500) and v2 (k scaled by the case's factor)."""
    (path / "perf").mkdir(parents=True)
    sh(["git", "init", "-q"], path)
    sh(["git", "config", "user.email", "bench@perfci"], path)
    sh(["git", "config", "user.name", "bench"], path)
    wl = path / "perf" / "injected.py"
    wl.write_text(WORKLOAD.format(budget=budget, factors={c: 1.0 for c in CASES}, kernel=kernel))
    sh(["git", "add", "."], path)
    sh(["git", "commit", "-qm", "v1"], path)
    wl.write_text(WORKLOAD.format(budget=budget, factors=CASES, kernel=kernel))
    sh(["git", "commit", "-qam", "v2: injected slowdowns"], path)
    return path


def machine() -> dict[str, Any]:
    from perfci.profilers.fingerprint import fingerprint, runner_name

    fp = fingerprint()
    return {
        "runner": runner_name(fp),
        "cpu_model": fp.get("cpu_model"),
        "logical_cores": fp.get("cpu_logical_cores"),
        "python": platform.python_version(),
        "load_average_at_start": os.getloadavg(),
    }


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def save(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def write_doc(name: str, text: str) -> Path:
    DOCS.mkdir(parents=True, exist_ok=True)
    path = DOCS / f"{name}.md"
    path.write_text(text)
    return path


def rows_of(comparison_json: Path, metric: str | None = None) -> dict[str, dict[str, Any]]:
    """The timed (latency.*) rows of a saved comparison, or those of `metric`, by the case's parameter value (or
    full id)."""
    doc = json.loads(comparison_json.read_text())
    out = {}
    for r in doc["rows"]:
        if r["metric"] == metric if metric else r["metric"].startswith("latency."):
            key = r["case_id"].split("case=", 1)[-1].split("]", 1)[0] if "case=" in r["case_id"] else r["case_id"]
            out[key] = r
    return out


class Clock:
    def __init__(self) -> None:
        self.start = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start
