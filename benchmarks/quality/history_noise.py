"""Stored-baseline comparisons with the cross-job noise learned from history (`--history-noise`) vs the default.

Input: N >= 12 results files of the same code on one runner, e.g. from
`python benchmarks/aa_stability.py --runs 12 --out DIR`. For every pair of runs i < j (baseline i, candidate j) the
history is the other N - 2 runs, ingested into a fresh SQLite store, and each case is compared at injected
slowdowns (the candidate's samples multiplied by 1.00, 1.05, 1.10, 1.20): once with the default cross-job noise
and once with the noise learned from that history. A/A (1.00) regressions are false alarms; at the other
factors a regression is a catch.

Usage: python benchmarks/quality/history_noise.py DIR [DIR ...]   (reads DIR/run-*/results.json)
"""

from __future__ import annotations

import itertools
import statistics
import sys
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

from perfci.compare.decide import compare_runs
from perfci.compare.history_noise import HistoryNoise
from perfci.compare.policy import DecisionSettings
from perfci.format.model import RunResult
from perfci.format.schema import load_results
from perfci.store.history import HistoryStore

FACTORS = (1.00, 1.05, 1.10, 1.20)
RUNNER = "bench"


def slowed(run: RunResult, factor: float) -> RunResult:
    cases = tuple(
        replace(c, rounds=tuple(replace(r, samples=tuple(x * factor for x in r.samples)) for r in c.rounds))
        for c in run.cases
    )
    return replace(run, cases=cases, run_id=f"{run.run_id}-x{factor}")


def main() -> int:
    files = sorted(f for d in sys.argv[1:] for f in Path(d).glob("run-*/results.json"))
    runs = [load_results(f) for f in files]
    if len(runs) < 12:
        print(f"need at least 12 runs, found {len(runs)}", file=sys.stderr)
        return 2
    counts: dict[tuple[float, str], Counter[str]] = {}
    used: dict[str, list[float]] = {}
    pairs = list(itertools.combinations(range(len(runs)), 2))
    with tempfile.TemporaryDirectory(prefix="perfci-hn-") as tmp:
        for n, (i, j) in enumerate(pairs):
            store = HistoryStore(f"sqlite:///{Path(tmp) / f'h{n}.db'}")
            store.ingest_many((r, RUNNER) for k, r in enumerate(runs) if k not in (i, j))
            for factor in FACTORS:
                cand = slowed(runs[j], factor)
                lookup = HistoryNoise(store, RUNNER)
                for source, settings in (
                    ("default", DecisionSettings(metrics=("latency.median",))),
                    ("history", DecisionSettings(metrics=("latency.median",), job_noise_lookup=lookup)),
                ):
                    comparison = compare_runs(runs[i], cand, settings, ("base", "cand"))
                    for row in comparison.rows:
                        counts.setdefault((factor, source), Counter())[row.verdict.value] += 1
                for (case, _), noise in lookup.used.items():
                    used.setdefault(case, []).append(noise)
    print(
        f"{len(runs)} runs ({', '.join(sys.argv[1:])}); {len(pairs)} pairs (baseline earlier, candidate later), "
        f"history = the other {len(runs) - 2} runs; {len(runs[0].cases)} cases per run.\n"
    )
    print("| factor | noise | regression | inconclusive | unchanged | other |")
    print("| --- | --- | --- | --- | --- | --- |")
    for factor in FACTORS:
        for source in ("default", "history"):
            c = counts.get((factor, source), Counter())
            other = sum(v for k, v in c.items() if k not in ("regression", "inconclusive", "unchanged"))
            print(f"| {factor:.2f} | {source} | {c['regression']} | {c['inconclusive']} | {c['unchanged']} | {other} |")
    print("\nCross-job noise used with --history-noise (upper 90% bound), per case over the pairs:\n")
    print("| case | median | min | max |")
    print("| --- | --- | --- | --- |")
    for case, values in sorted(used.items()):
        print(f"| `{case}` | {statistics.median(values):.3f} | {min(values):.3f} | {max(values):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
