"""Summarise a GPU results file against the measurement-engine bars; print a table, exit 1 if a bar fails.

Usage: python benchmarks/gpu_check.py RESULTS.json
"""

from __future__ import annotations

import sys
from pathlib import Path

from perfci.format.model import CaseResult
from perfci.format.schema import load_results


def metric(case: CaseResult | None, name: str) -> float:
    m = case.metric(name) if case else None
    return m.value if m else float("nan")


def main(path: str) -> int:
    run = load_results(Path(path))
    by_id = {c.id: c for c in run.cases}

    def find(prefix: str) -> CaseResult | None:
        return next((c for c in run.cases if c.id.startswith(prefix)), None)

    peaks = run.fingerprint.get("peaks", {}).get("cuda", {})
    rows: list[tuple[str, str, bool]] = []
    copy = find("gpu_workloads.copy")
    pct = metric(copy, "bandwidth.pct_peak")
    rows.append(
        (
            "copy bandwidth vs calibrated peak",
            f"{metric(copy, 'bandwidth'):.0f} GB/s = {pct:.1f}% of {peaks.get('bandwidth_gbps', 0):.0f} GB/s",
            90.0 <= pct <= 110.0,
        )
    )
    graph = find("gpu_workloads.tiny[gpu_mode=graph]")
    hot = find("gpu_workloads.tiny[gpu_mode=hot]")
    g_us = metric(graph, "latency.median") * 1e6
    rows.append(
        (
            "tiny kernel per call, graph mode (hot)",
            f"{g_us:.2f} us (eager {metric(hot, 'latency.median') * 1e6:.2f} us)",
            g_us < 3.0,
        )
    )
    # cold (one guarded call after an L2 flush) against graph replay (back-to-back calls, warm L2): both are GPU
    # time without launch gaps; eager hot is shown too but is launch-bound for the 8 MiB sum
    for mib, expect_differ in ((8, True), (2048, False)):
        w = metric(find(f"gpu_workloads.reduce[mib={mib},gpu_mode=graph]"), "latency.median")
        c = metric(find(f"gpu_workloads.reduce[mib={mib},gpu_mode=cold]"), "latency.median")
        h = metric(find(f"gpu_workloads.reduce[mib={mib},gpu_mode=hot]"), "latency.median")
        ratio = c / w
        ok = ratio > 1.10 if expect_differ else abs(ratio - 1.0) < 0.05
        shown = f"{ratio:.3f} ({c * 1e6:.1f} us / {w * 1e6:.1f} us; eager hot {h * 1e6:.1f} us)"
        rows.append((f"reduce {mib} MiB cold/warm (graph)", shown, ok))
    tel = copy.rounds[0].telemetry if copy and copy.rounds else {}
    gpu = tel.get("gpu", {})
    has = all(gpu.get(k) and gpu[k][0] is not None for k in ("sm_clock_mhz", "mem_clock_mhz", "power_w"))
    rows.append(
        (
            "NVML clocks, power, energy in results",
            f"sm {gpu.get('sm_clock_mhz', [None])[0]} MHz, mem {gpu.get('mem_clock_mhz', [None])[0]} MHz, "
            f"power {gpu.get('power_w', [None])[0]} W, energy/call {tel.get('energy_per_call_j')} J, "
            f"throttle flagged {tel.get('throttle_flagged')}, dropped {tel.get('throttle_dropped')}",
            has and tel.get("energy_per_call_j") is not None,
        )
    )
    width = max(len(r[0]) for r in rows)
    for name, value, ok in rows:
        print(f"{'PASS' if ok else 'FAIL'}  {name:<{width}}  {value}")
    print(f"(cases: {len(by_id)}, peaks: {peaks})")
    return 0 if all(ok for _, _, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
