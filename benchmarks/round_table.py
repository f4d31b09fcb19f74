"""Per-round view of a results file: for each case (optionally filtered by a substring), one line per round with
the worker pid, iterations per sample, sample count, the round's median per-call time, its minor page faults per
call and its peak RSS. Shows per-process regimes (a case bimodal across rounds) that a case median hides.
Usage: python benchmarks/round_table.py RESULTS.json [SUBSTRING]
"""

from __future__ import annotations

import statistics
import sys

from perfci.format.schema import load_results


def main() -> None:
    results = load_results(sys.argv[1])
    wanted = sys.argv[2] if len(sys.argv) > 2 else ""
    for case in results.cases:
        if wanted not in case.id:
            continue
        print(f"{case.id}")
        print("  round    pid  iters  samples  median_ms  faults/call  peak_rss_MiB")
        for r in case.rounds:
            if not r.samples:
                continue
            median = statistics.median(x / r.iterations for x in r.samples) * 1e3
            faults = r.telemetry.get("minor_faults_per_call", float("nan"))
            rss = r.peak_rss_bytes / 2**20 if r.peak_rss_bytes else float("nan")
            print(
                f"  {r.index:5d} {r.pid:6d} {r.iterations:6d} {len(r.samples):8d} {median:10.3f}"
                f" {faults:12.2f} {rss:13.1f}"
            )


if __name__ == "__main__":
    main()
