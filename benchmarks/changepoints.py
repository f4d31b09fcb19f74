"""Change-point detection on realistic CI history: which method finds steps and stays quiet on null history?

Usage: python benchmarks/changepoints.py [--series 300] [--seeds 0 1 2] [--runs 60]

Each series has `--runs` runs; its log value is AR(1) noise (phi 0.9, stationary sd 2%), plus outliers (2% of
runs multiplied by 1.15), and, in half of the series, a step halfway (+2%, +5%, +10%). A "heavy tails" variant
draws the innovations from Student's t with 3 degrees of freedom (scaled to the same sd). Generators are our own
and seeded. A step counts as found when a change point lies within 3 runs of it; every other change point is
false. Methods:
- perfci: perfci.stats.changepoint.detect_change_points (outliers cleaned, AR(1) pre-whitened step scan);
- mean-shift: the previous method (two-sample t on log means, binary segmentation), mean_shift_points;
- ruptures-rbf: ruptures' KernelCPD(kernel="rbf", min_size=3) with a BIC-like penalty, when ruptures is installed
  (`pip install ruptures`; not a perfci dependency).
Both perfci methods run with trend's defaults (alpha 0.01, min_effect 0.03).
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Callable

from perfci.stats.changepoint import detect_change_points, mean_shift_points

PHI, SD, OUTLIER_RATE, OUTLIER = 0.9, 0.02, 0.02, 1.15


def series(rng: random.Random, runs: int, step: float, heavy: bool) -> list[float]:
    innovation_sd = SD * math.sqrt(1 - PHI**2)
    u = rng.gauss(0.0, SD)
    out = []
    for i in range(runs):
        if heavy:
            z = rng.gauss(0.0, 1.0) / math.sqrt(rng.gammavariate(1.5, 2.0) / 3.0)  # Student t, 3 dof
            e = innovation_sd * z / math.sqrt(3.0)  # t(3) has variance 3
        else:
            e = rng.gauss(0.0, innovation_sd)
        u = PHI * u + e
        level = math.log1p(step) if i >= runs // 2 else 0.0
        x = math.exp(level + u)
        out.append(x * OUTLIER if rng.random() < OUTLIER_RATE else x)
    return out


def perfci_method(xs: list[float]) -> list[int]:
    return [p.index for p in detect_change_points(xs)]


def ruptures_method() -> Callable[[list[float]], list[int]] | None:
    try:
        import numpy as np
        import ruptures as rpt
    except ImportError:
        return None

    def detect(xs: list[float]) -> list[int]:
        logs = np.log(np.asarray(xs)).reshape(-1, 1)
        algo = rpt.KernelCPD(kernel="rbf", min_size=3).fit(logs)
        return [b for b in algo.predict(pen=2.0 * math.log(len(xs))) if b < len(xs)]

    return detect


def score(detect: Callable[[list[float]], list[int]], data: list[tuple[list[float], int | None]]) -> dict[str, float]:
    found = steps = false_null = null_runs = null_flagged = null_series = 0
    start = time.perf_counter()
    for xs, step_at in data:
        points = detect(xs)
        if step_at is None:
            null_series += 1
            null_runs += len(xs)
            false_null += len(points)
            null_flagged += bool(points)
        else:
            steps += 1
            found += any(abs(p - step_at) <= 3 for p in points)
    elapsed = time.perf_counter() - start
    return {
        "recall": found / steps if steps else math.nan,
        "false_per_100": 100.0 * false_null / null_runs if null_runs else math.nan,
        "null_flagged": null_flagged / null_series if null_series else math.nan,
        "ms_per_series": 1000.0 * elapsed / len(data),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=300, help="series per setting and seed (half with a step)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    methods: dict[str, Callable[[list[float]], list[int]]] = {"perfci": perfci_method, "mean-shift": mean_shift_points}
    rupt = ruptures_method()
    if rupt is not None:
        methods["ruptures-rbf"] = rupt
    print(f"{args.series} series x {len(args.seeds)} seeds per setting, {args.runs} runs each; recall within 3 runs")
    print(f"{'setting':<22} {'method':<13} {'recall':>7} {'false/100 runs':>15} {'null flagged':>13} {'ms/series':>10}")
    for heavy in (False, True):
        for step in (0.02, 0.05, 0.10):
            setting = f"{'t(3)' if heavy else 'normal'} step {step:+.0%}"
            for name, detect in methods.items():
                totals: list[dict[str, float]] = []
                for seed in args.seeds:
                    rng = random.Random(f"{seed}:{heavy}:{step}")
                    data = [
                        (series(rng, args.runs, step if i % 2 else 0.0, heavy), args.runs // 2 if i % 2 else None)
                        for i in range(args.series)
                    ]
                    totals.append(score(detect, data))
                avg = {k: sum(t[k] for t in totals) / len(totals) for k in totals[0]}
                worst_recall = min(t["recall"] for t in totals)
                print(
                    f"{setting:<22} {name:<13} {avg['recall']:>7.3f} {avg['false_per_100']:>15.2f} "
                    f"{avg['null_flagged']:>13.3f} {avg['ms_per_series']:>10.2f}"
                    f"   (worst seed recall {worst_recall:.3f})"
                )


if __name__ == "__main__":
    main()
