"""Seeded A/Bs of a CUDA case's device time through the look loop (the CPU twin of tests/unit/test_steady_clock.py),
with the row compared pair by pair where that interval is narrower (the default) against the two sides as
interleaved samples only. Prints, per noise model, the verdicts and the pairs run (mean, max) of 200 A/As and 200
A/Bs of +0.6%, 1% threshold, 3 looks (docs/compare.md, "CUDA cases").

    python benchmarks/device_pairing_sim.py [SEEDS]
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfci.compare import decide
from perfci.compare.policy import DecisionSettings
from perfci.stats.logratio import narrower
from tests.unit.test_steady_clock import _ab, _device_row

MODELS = (
    ("pair-shared 0.6% + 0.1% own", 0.001, 0.006),
    ("independent 0.25%", 0.0025, 0.0),
    ("independent 0.1%", 0.001, 0.0),
    ("independent 1.3% (by process)", 0.013, 0.0),
)


def run(effect: float, sd: float, shared: float, seeds: range) -> str:
    settings = DecisionSettings(looks=3)
    verdicts: Counter[str] = Counter()
    pairs = []
    for seed in seeds:
        cmp, n = _ab(effect, sd, seed, settings, shared=shared)
        verdicts[_device_row(cmp).verdict.value] += 1
        pairs.append(n)
    return f"{dict(verdicts)}, pairs {sum(pairs) / len(pairs):.1f} (max {max(pairs)})"


def main(n: int) -> None:
    for label, sd, shared in MODELS:
        for mode, choose in (("narrower", narrower), ("interleaved", lambda first, second, confidence: first)):
            decide.narrower = choose  # type: ignore[assignment]
            aa = run(0.0, sd, shared, range(1000, 1000 + n))
            ab = run(0.006, sd, shared, range(2000, 2000 + n))
            print(f"{label:28} {mode:12} A/A {aa}; +0.6% {ab}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
