"""Change-point detection on realistic CI history: which method finds steps and stays quiet on null history?

Usage: python benchmarks/changepoints.py [--seeds tune|holdout|SEED...] [--series 80] [--runs 60] [--quick]

Seeds are split on purpose: the detector's settings were chosen looking at the `tune` set only; `holdout` (a
disjoint range) is what its figures are reported on. Integer seeds run any other set (for a check on seeds nobody
looked at). Each seed draws `--series` series per setting, half with a step and half without (80: 40 + 40), so a
named set of 10 seeds holds 400 step series and 400 null series per setting.

A series has `--runs` runs; its log value is AR(1) noise (phi 0.9, stationary sd 2%), plus outliers (2% of runs
multiplied by 1.15), and, in the step series, a step (+2%, +5%, +10%) halfway or at a random run ("anywhere":
uniform over [10, runs - 10]). A "t(3)" variant draws the innovations from Student's t with 3 degrees of freedom
(scaled to the same sd). Generators are our own and seeded. A step counts as found when a change point lies within
3 runs of it. Figures:
- recall: the share of step series whose step was found;
- false/100: change points that are not the found step, per 100 runs, on the null series and (away) on the step
  series (every change point further than 3 runs from the step, and any second one within 3 runs);
- null flagged: the share of null series with at least one change point;
- |loc err|: mean distance in runs between the step and the nearest change point, over the found steps; exact:
  the share of found steps placed on the very run;
- worst: the lowest recall of one seed (40 step series at the default `--series`);
- ms/series: the detector's time per series on this machine.
Methods:
- perfci: perfci.stats.changepoint.detect_change_points (docs/changepoints.md);
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

from estimators import mean_shift_points

from perfci.stats.changepoint import detect_change_points

PHI, SD, OUTLIER_RATE, OUTLIER = 0.9, 0.02, 0.02, 1.15
SEED_SETS = {"tune": range(1000, 1010), "holdout": range(2000, 2010)}  # disjoint on purpose
NEAR = 3  # a change point within this many runs of the step finds it

Detect = Callable[[list[float]], list[int]]


def series(rng: random.Random, runs: int, step: float, step_at: int | None, heavy: bool) -> list[float]:
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
        level = math.log1p(step) if step_at is not None and i >= step_at else 0.0
        x = math.exp(level + u)
        out.append(x * OUTLIER if rng.random() < OUTLIER_RATE else x)
    return out


@dataclass(frozen=True)
class Setting:
    step: float
    heavy: bool
    anywhere: bool  # the step at a random run rather than halfway

    @property
    def name(self) -> str:
        where = "anywhere" if self.anywhere else "halfway"
        return f"{'t(3)' if self.heavy else 'normal'} {self.step:+.0%} {where}"

    def data(self, seed: int, n_series: int, runs: int) -> list[tuple[list[float], int | None]]:
        rng = random.Random(f"{seed}:{self.heavy}:{self.step}:{self.anywhere}")
        out: list[tuple[list[float], int | None]] = []
        for i in range(n_series):
            at = (rng.randint(10, runs - 10) if self.anywhere else runs // 2) if i % 2 else None
            out.append((series(rng, runs, self.step, at, self.heavy), at))
        return out


@dataclass
class Tally:
    steps: int = 0
    found: int = 0
    step_runs: int = 0
    false_away: int = 0
    nulls: int = 0
    null_runs: int = 0
    false_null: int = 0
    null_flagged: int = 0
    loc_err: int = 0
    exact: int = 0
    seconds: float = 0.0

    def merged(self, other: Tally) -> Tally:
        return Tally(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def add(self, points: Sequence[int], runs: int, step_at: int | None) -> None:
        if step_at is None:
            self.nulls += 1
            self.null_runs += runs
            self.false_null += len(points)
            self.null_flagged += bool(points)
            return
        self.steps += 1
        self.step_runs += runs
        near = [p for p in points if abs(p - step_at) <= NEAR]
        if near:
            err = min(abs(p - step_at) for p in near)
            self.found += 1
            self.loc_err += err
            self.exact += err == 0
        self.false_away += len(points) - bool(near)


def score(detect: Detect, data: list[tuple[list[float], int | None]], tally: Tally) -> None:
    start = time.perf_counter()
    points = [detect(xs) for xs, _ in data]
    tally.seconds += time.perf_counter() - start
    for (xs, at), found in zip(data, points, strict=True):
        tally.add(found, len(xs), at)


def ruptures_method() -> Detect | None:
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


def seeds_of(spec: list[str]) -> list[int]:
    if len(spec) == 1 and spec[0] in SEED_SETS:
        return list(SEED_SETS[spec[0]])
    try:
        return [int(s) for s in spec]
    except ValueError:
        raise SystemExit(f"--seeds takes {' or '.join(SEED_SETS)} or integers, not {' '.join(spec)}") from None


def perfci_method(xs: list[float]) -> list[int]:
    return [p.index for p in detect_change_points(xs)]


def row(setting: str, name: str, t: Tally, n: int, worst: float) -> str:
    recall = t.found / t.steps
    null_fp = 100.0 * t.false_null / t.null_runs
    away_fp = 100.0 * t.false_away / t.step_runs
    loc = t.loc_err / t.found if t.found else math.nan
    exact = t.exact / t.found if t.found else math.nan
    ms = 1000.0 * t.seconds / n
    return (
        f"{setting:<22} {name:<12} {recall:>7.3f} {null_fp:>10.2f} {away_fp:>10.2f} "
        f"{t.null_flagged / t.nulls:>8.3f} {loc:>9.2f} {exact:>6.2f} {worst:>6.3f} {ms:>9.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", default=["holdout"], help="tune, holdout, or integer seeds")
    parser.add_argument("--series", type=int, default=80, help="series per setting and seed (half with a step)")
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--quick", action="store_true", help="5%% steps and perfci only")
    args = parser.parse_args()
    seeds = seeds_of(args.seeds)
    methods: dict[str, Detect] = {"perfci": perfci_method}
    if not args.quick:
        methods["mean-shift"] = mean_shift_points
        rupt = ruptures_method()
        if rupt is not None:
            methods["ruptures-rbf"] = rupt
    steps = (0.05,) if args.quick else (0.02, 0.05, 0.10)
    settings = [Setting(s, h, a) for h in (False, True) for s in steps for a in (False, True)]
    print(f"seeds {' '.join(args.seeds)}: {len(seeds)} seed(s) x {args.series} series per setting, {args.runs} runs")
    print(
        f"{'setting':<22} {'method':<12} {'recall':>7} {'false/100':>10} {'away/100':>10} "
        f"{'flagged':>8} {'|loc err|':>9} {'exact':>6} {'worst':>6} {'ms/series':>9}"
    )
    for setting in settings:
        per_seed = [setting.data(seed, args.series, args.runs) for seed in seeds]
        for name, detect in methods.items():
            tally, recalls = Tally(), []
            for data in per_seed:
                one = Tally()
                score(detect, data, one)
                recalls.append(one.found / one.steps)
                tally = tally.merged(one)
            print(row(setting.name, name, tally, sum(map(len, per_seed)), min(recalls)))


if __name__ == "__main__":
    main()
