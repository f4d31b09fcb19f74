"""A/A stability across separate `perfci run` invocations.

Runs `perfci run` N times on the same code (default suite unless paths are given), then reports per case the
spread of the reported median latency across invocations: max/min - 1. The bar (issue #3) is <= 3% for cases of
1 ms or more on the 2-core CI machine.

Usage: python benchmarks/aa_stability.py [--runs 5] [--out DIR] [-- extra perfci run args]
Prints a Markdown table (paste it into docs/ with the date and machine).
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import subprocess
import sys
from pathlib import Path

from perfci.profilers.fingerprint import cpu_model
from perfci.schema import load_results


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path(".perfci/aa-stability"))
    parser.add_argument("extra", nargs="*", help="extra arguments for perfci run (after --)")
    args = parser.parse_args()
    medians: dict[str, list[float]] = {}
    low: dict[str, list[tuple[float, float]]] = {}  # per invocation: (10th percentile, minimum) of all samples
    for i in range(args.runs):
        out = args.out / f"run-{i}"
        cmd = [sys.executable, "-m", "perfci", "run", "--out", str(out), "--exit-zero", *args.extra]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        for case in load_results(out / "results.json").cases:
            m = case.metric("latency.median")
            if m is not None:
                medians.setdefault(case.id, []).append(m.value)
                per_call = sorted(x / r.iterations for r in case.rounds for x in r.samples)
                low.setdefault(case.id, []).append((per_call[len(per_call) // 10], per_call[0]))
    print(
        f"A/A stability, {args.runs} invocations of `perfci run {' '.join(args.extra)}`, "
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {cpu_model()}, {platform.node()}\n"
    )
    print("| case | medians (ms) | max/min - 1 | bar (<= 3% for >= 1 ms) |")
    print("| --- | --- | --- | --- |")
    worst = 0.0
    for case_id, values in medians.items():
        spread = max(values) / min(values) - 1.0
        applies = min(values) >= 1e-3
        verdict = ("pass" if spread <= 0.03 else "FAIL") if applies else "n/a (< 1 ms)"
        if applies:
            worst = max(worst, spread)
        shown = ", ".join(f"{v * 1e3:.3f}" for v in values)
        print(f"| `{case_id}` | {shown} | {spread * 100:.1f}% | {verdict} |")
    print(f"\nworst spread among cases >= 1 ms: {worst * 100:.1f}%")
    print("\nOther estimators over the same samples (spread across invocations), for comparison:\n")
    print("| case | 10th percentile, max/min - 1 | minimum, max/min - 1 |")
    print("| --- | --- | --- |")
    for case_id, pairs in low.items():
        p10, mins = [p[0] for p in pairs], [p[1] for p in pairs]
        print(f"| `{case_id}` | {max(p10) / min(p10) - 1:.1%} | {max(mins) / min(mins) - 1:.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
