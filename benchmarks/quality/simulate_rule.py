"""Seeded simulation of the paired rule with perfci ab's default schedule: false alarms and power by pair noise.

Same code path as `perfci ab` minus the processes: `paired_log_ratio` (20% trimming), `decide` at alpha / looks,
continuation like `perfci.ab.orchestrate.needs_more` (inconclusive, or unchanged at least half-way to theta_eff).
Pair noise: log(B/A) per pair = factor + N(0, sd) on each side's round, plus, for "wild" pairs, a 0.45 jump on
one round with the given probability (a neighbour's burst). Usage: python benchmarks/quality/simulate_rule.py [N]
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

from perfci.stats.decision import decide

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from estimators import paired_log_ratio

SCHEDULE = (8, 6, 6)
FACTORS = (1.0, 1.02, 1.03, 1.05, 1.10)


def trial(rng: random.Random, factor: float, sd: float, wild: float, theta: float = 0.03) -> str:
    a: list[float] = []
    b: list[float] = []
    verdict = "unchanged"
    for n in SCHEDULE:
        for _ in range(n):
            ja = 0.45 if rng.random() < wild else 0.0
            jb = 0.45 if rng.random() < wild else 0.0
            a.append(math.exp(ja + rng.gauss(0, sd / math.sqrt(2))))
            b.append(math.exp(math.log(factor) + jb + rng.gauss(0, sd / math.sqrt(2))))
        est = paired_log_ratio(a, b, 0.2)
        d = decide(est, theta, 0.01 / len(SCHEDULE))
        verdict = d.verdict
        if verdict in ("regression", "improvement"):
            return verdict
        if verdict == "unchanged" and est.log_ratio < 0.5 * math.log1p(d.threshold):
            return verdict
    return verdict


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    print("| pair noise sd (log B/A) | " + " | ".join(f"{f:.2f}" for f in FACTORS) + " |")
    print("|---" * (len(FACTORS) + 1) + "|")
    for sd, wild in ((0.02, 0.0), (0.05, 0.0), (0.05, 0.2)):
        cells = []
        for f in FACTORS:
            rng = random.Random(f"{sd}:{wild}:{f}")
            hits = sum(trial(rng, f, sd, wild) == "regression" for _ in range(n))
            cells.append(f"{hits / n:.1%}")
        label = f"{sd:.0%}" + (f" + {wild:.0%} wild pairs" if wild else "")
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
