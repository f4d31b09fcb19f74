"""A/A stability across separate `perfci run` invocations.

Runs `perfci run` N times on the same code (default suite unless paths are given), then reports per case the
spread of the reported median latency across invocations: max/min - 1. The bar is <= 3% for cases of
1 ms or more on the 2-core CI machine.

Usage: python benchmarks/aa_stability.py [--runs 5] [--out DIR] [--reuse] [-- extra perfci run args]
Prints Markdown tables (paste them into docs/ with the date and machine): the spread of the medians, of two
other estimators, and the round-to-round scatter inside an invocation that the median's spread comes from.
`--reuse` analyses the results already in DIR/run-*/ instead of running perfci again; with `--reuse`, `--out` may be
given several times to pool their invocations (e.g. runs made on different days or with different options).
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import platform
import statistics
import subprocess
import sys
from pathlib import Path

from estimators import expected_normal_range, job_components, rounds_for_spread

from perfci.format.schema import load_results
from perfci.metrics import reference_ratio
from perfci.profilers.fingerprint import cpu_model

BAR_INVOCATIONS = 5  # the bar: the spread of 5 invocations' medians


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, action="append", help="[default: .perfci/aa-stability]")
    parser.add_argument("--reuse", action="store_true", help="analyse DIR/run-*/results.json, run nothing")
    parser.add_argument("extra", nargs="*", help="extra arguments for perfci run (after --)")
    args = parser.parse_args()
    outs = args.out or [Path(".perfci/aa-stability")]
    if len(outs) > 1 and not args.reuse:
        parser.error("several --out only with --reuse")
    medians: dict[str, list[float]] = {}
    low: dict[str, list[tuple[float, float]]] = {}  # per invocation: (10th percentile, minimum) of all samples
    scatter: dict[str, list[list[float]]] = {}  # per invocation: log of each round's median per-call time
    vs_ref: dict[str, list[float]] = {}  # per invocation: latency.vs_reference (profilers/reference.py)
    ratio_scatter: dict[str, list[list[float]]] = {}  # per invocation: log of each round's ratio to the reference
    for out in (d / f"run-{j}" for d in outs for j in range(args.runs)):
        cmd = [sys.executable, "-m", "perfci", "run", "--out", str(out), "--exit-zero", *args.extra]
        if not args.reuse:
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        for case in load_results(out / "results.json").cases:
            scatter.setdefault(case.id, []).append(
                [math.log(statistics.median(x / r.iterations for x in r.samples)) for r in case.rounds if r.samples]
            )
            ratios = [reference_ratio(r) for r in case.rounds]
            if any(ratios):
                ratio_scatter.setdefault(case.id, []).append([math.log(x) for x in ratios if x])
            ratio = case.metric("latency.vs_reference")
            if ratio is not None:
                vs_ref.setdefault(case.id, []).append(ratio.value)
            m = case.metric("latency.median")
            if m is not None:
                medians.setdefault(case.id, []).append(m.value)
                per_call = sorted(x / r.iterations for r in case.rounds for x in r.samples)
                low.setdefault(case.id, []).append((per_call[len(per_call) // 10], per_call[0]))
    print(
        f"A/A stability, {len(outs) * args.runs} invocations of `perfci run {' '.join(args.extra)}`, "
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
    print_round_scatter(scatter)
    print_reference_spread(vs_ref, medians)
    print_round_scatter(ratio_scatter, "latency.vs_reference")
    return 0


def print_reference_spread(vs_ref: dict[str, list[float]], medians: dict[str, list[float]]) -> None:
    """Spread across invocations of `latency.vs_reference` (the per-round ratio to the speed reference timed
    beside the case), next to the latency's: how much of the spread is the machine's speed."""
    if not vs_ref:
        return
    print("\nSpeed-reference ratio `latency.vs_reference` (x the reference kernel), across invocations:\n")
    print("| case | ratios | max/min - 1 | latency max/min - 1 |")
    print("| --- | --- | --- | --- |")
    for case_id, values in vs_ref.items():
        lat = medians.get(case_id, [])
        lat_spread = f"{max(lat) / min(lat) - 1:.1%}" if lat else "-"
        shown = ", ".join(f"{v:.3f}" for v in values)
        print(f"| `{case_id}` | {shown} | {max(values) / min(values) - 1:.1%} | {lat_spread} |")


def print_round_scatter(scatter: dict[str, list[list[float]]], label: str = "latency") -> None:
    """Variance components (perfci/stats/components.py) of the log round values: the round-to-round sd inside
    an invocation, the sd of the invocations' means as observed, and the job-level term beyond what the rounds
    explain. With only the round term, the invocations' means spread about expected_normal_range(k) standard
    errors (2.33 for 5); the job term does not shrink with more rounds, so it sets a floor on the spread."""
    k = max((len(v) for v in scatter.values()), default=0)
    if k < 2:
        return
    print(
        f"\nVariance components of the log round values, {label} (sd; {k} invocations; the last two columns "
        f"for the bar's {BAR_INVOCATIONS} invocations):\n"
    )
    print(
        "| case | rounds | within an invocation | of the invocations' means | job term | floor of the spread "
        "(job term alone) | rounds for <= 3% |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    factor = expected_normal_range(BAR_INVOCATIONS)
    for case_id, per_run in scatter.items():
        try:
            c = job_components(per_run)
        except ValueError:
            continue
        need = rounds_for_spread(c, 0.03, BAR_INVOCATIONS)
        shown = "never (job term alone > 3%)" if need is None else f"{math.ceil(need)}"
        print(
            f"| `{case_id}` | {c.rounds:.3g} | {c.within_sd:.1%} | {c.between_sd:.1%} | {c.job_sd:.1%} | "
            f"{math.expm1(factor * c.job_sd):.1%} | {shown} |"
        )


if __name__ == "__main__":
    sys.exit(main())
