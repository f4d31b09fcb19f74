"""One line per case and clock of a `perfci ab` output folder (benchmarks/gpu_two_clocks.sh): verdict, change,
interval, and the spread of the round values (max / min - 1, both sides pooled), plus the A/B's exit code, wall
time and pairs. Usage: python3 benchmarks/two_clocks_table.py OUT NAME EXIT WALL_S"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from perfci.format.schema import load_results
from perfci.metrics.registry import DEVICE_TIME, HOST_OVERHEAD, LATENCY, metric_def, round_values

CLOCKS = (LATENCY, DEVICE_TIME, HOST_OVERHEAD)


def main(out: Path, name: str, rc: str, wall: float) -> None:
    found = out / "comparison.json"  # absent where the A/B was stopped (a time-out): the rounds so far are shown
    comp = json.loads(found.read_text()) if found.exists() else {"settings": {}, "rows": []}
    ab = comp["settings"].get("ab", {})
    print(f"{name}: exit {rc}, wall {wall:.1f} s, {ab.get('pairs_run')} pairs / {ab.get('looks_run')} looks")
    runs = [load_results(out / side / "results.json") for side in ("base", "head")]
    rows = {(r["case_id"], r["metric"]): r for r in comp["rows"]}
    for case in runs[1].cases:
        for metric in CLOCKS:
            mdef = metric_def(metric)
            values = [v for run in runs if (c := run.case(case.id)) for v in round_values(c, mdef).values()]
            spread = f"{max(values) / min(values) - 1:6.1%}" if values else "   -  "
            r = rows.get((case.id, metric))
            if r is None:
                print(f"  {case.id:<28} {metric:<15} (no row) round spread {spread}")
                continue
            lo, hi = r.get("ratio_low"), r.get("ratio_high")
            interval = f"[{lo - 1:+.2%}..{hi - 1:+.2%}]" if lo and hi else ""
            change = f"{r['ratio'] - 1:+.2%}" if r.get("ratio") else "-"
            print(f"  {case.id:<28} {metric:<15} {r['verdict']:<12} {change:>8} {interval:<20} round spread {spread}")
        for side, run in zip(("base", "head"), runs, strict=True):
            c = run.case(case.id)
            if c is None:
                continue
            devs = round_values(c, metric_def(DEVICE_TIME))
            mid = sorted(devs.values())[len(devs) // 2] if devs else 0.0
            shown = " ".join(f"{v / mid - 1:+.1%}" for _, v in sorted(devs.items())) if mid else "-"
            sm = [r.telemetry.get("device_clock_sm_mhz") for r in c.rounds]
            print(f"  {case.id:<28} {side} device time by round vs median: {shown}; SM MHz {sm}")
        phases: dict[str, list[float]] = {}
        for run in runs:
            for rnd in c.rounds if (c := run.case(case.id)) else ():
                for step, seconds in rnd.telemetry.get("worker_phases_s", {}).items():
                    phases.setdefault(step, []).append(seconds)
                for step, seconds in rnd.telemetry.get("device_slice_steps_s", {}).items():
                    phases.setdefault(f"slice.{step}", []).append(seconds)
        if phases:
            shown = ", ".join(f"{k} {sorted(v)[len(v) // 2]:.2f}" for k, v in phases.items())
            print(f"  {case.id:<28} worker s per round (median): {shown}")
        kernels = {r.device.kernels for r in case.rounds if r.device is not None}
        dropped = sum(r.device.dropped_calls for r in case.rounds if r.device is not None)
        print(f"  {case.id:<28} kernels per call {sorted(kernels)}, dropped calls {dropped}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4]))
