"""Issue 15's bar on the CPU, with real worker processes: each case's `memory.host` is its own, the same alone
and beside the others; derived bytes are what a call touches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_run_subprocess import perfci

WORKLOADS = Path(__file__).parent.parent / "data" / "memory_cases" / "memory_cases.py"
MIB = 2**20
pytestmark = pytest.mark.integration


def _run(tmp_path: Path, name: str, *args: str) -> dict[str, dict]:  # type: ignore[type-arg]
    out = tmp_path / name
    proc = perfci("run", str(WORKLOADS), "--out", str(out), *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "results.json").read_text())
    return {c["workload"].split(".")[-1]: c for c in doc["cases"]}


def _metric(case: dict, name: str) -> dict:  # type: ignore[type-arg]
    return next(m for m in case["metrics"] if m["name"] == name)


def test_memory_host_is_the_cases_own_alone_and_together(tmp_path: Path) -> None:
    together = _run(tmp_path, "together", "--rounds", "2", "--seed", "3")
    alone = {name: _run(tmp_path, name, "-k", name, "--rounds", "2")[name] for name in together}
    figures = {}
    for name, case in together.items():
        host = [r["telemetry"]["memory_host_bytes"] for r in case["rounds"]]
        solo = alone[name]["rounds"][0]["telemetry"]["memory_host_bytes"]
        figures[name] = (solo / MIB, [h / MIB for h in host])
        for h in host:  # the same alone and together, whatever the order in the round (+-2% or 1 MiB)
            assert abs(h - solo) <= max(0.02 * solo, MIB), figures
    print(figures)
    assert figures["small_case"][0] < 8 and max(figures["small_case"][1]) < 8
    assert abs(figures["big_resident"][0] / 381 - 1) <= 0.05
    assert abs(figures["transient_alloc"][0] / 191 - 1) <= 0.10
    assert _metric(together["small_case"], "memory.host")["value"] < 8 * MIB
    # the process's high-water mark is still there, as context
    assert _metric(together["small_case"], "memory.peak_rss")["value"] > 50 * MIB


def test_bandwidth_comes_from_the_bytes_a_call_touches(tmp_path: Path) -> None:
    cases = _run(tmp_path, "bytes", "--rounds", "2", "-k", "big_resident", "-k", "transient_alloc")
    big, transient = cases["big_resident"], cases["transient_alloc"]
    assert big["bytes"] < 10_000  # the 4 KB it reads (plus the scalar it writes), not the 400 MB it holds
    assert transient["bytes"] >= 400e6  # fill writes 200 MB, sum reads 200 MB
    assert big["rounds"][0]["telemetry"]["work_sources"]["bytes"] == "derived"
    pct = _metric(big, "bandwidth.pct_peak")
    assert pct["value"] <= 100 or pct.get("note", "").startswith("implausible")
