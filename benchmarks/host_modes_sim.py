"""Seeded A/Bs of a CUDA case whose host draws two speeds by process while its kernel time does not, through the
look loop of `perfci ab` (ab/orchestrate.run_ab's decision steps on fake rounds): the per-clock rule of
ab/bimodal.py (each clock judged on its own pairs) against the rule before it (the latency's groups capped every
row of the case and stopped it). Prints, per model, the `device.time` verdicts and the pairs run (mean, max).

Host: each process draws a latency 23% below the usual with probability P (GPT-2 small's latency pairs on an H100
runner fell at -23% and 0%); device time: 0.1% noise by process, the head `effect` slower. 1% threshold, 3 looks,
first look of GPU_FIRST_LOOK pairs, further looks as `next_look_pairs` asks (docs/compare.md, "CUDA cases").

    python benchmarks/host_modes_sim.py [SEEDS]
"""

from __future__ import annotations

import random
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfci.ab.bimodal import _capped, cap_process_modes, case_modes
from perfci.ab.orchestrate import _to_continue, mark_out_of_reach, next_look_pairs
from perfci.compare.decide import compare_runs
from perfci.compare.policy import DecisionSettings
from perfci.format.model import CaseResult, CaseSpec, CaseStatus, Comparison, DeviceTime, Round, RunResult
from perfci.metrics import case_metrics
from perfci.metrics.registry import DEVICE_TIME
from perfci.options import EXTRA, GPU_FIRST_LOOK

FAST = 0.77  # a process that drew the fast host: -23%


def _case(latency: list[float], device: list[float]) -> CaseResult:
    spec = CaseSpec(workload="models.gpt2_small", params={}, device="cuda")
    rounds = tuple(
        Round(i, 1000 + i, 10, tuple(m * (1 + 0.002 * k) for k in range(8)), 0.1, "budget", 1,
              device=DeviceTime("cupti", tuple(d * (1 + 0.0002 * k) for k in range(-3, 4)), kernels=246))
        for i, (m, d) in enumerate(zip(latency, device, strict=True))
    )  # fmt: skip
    return CaseResult.of(spec, CaseStatus.OK, rounds, case_metrics(rounds, None, None))


def _run(case: CaseResult) -> RunResult:
    return RunResult(run_id="r", started_at="", finished_at="", fingerprint={}, git=None, settings={}, cases=(case,))


def _before(comparison: Comparison, base: RunResult, head: RunResult) -> tuple[Comparison, set[str]]:
    """The rule before: the latency's groups capped every timed row of the case and stopped it."""
    found = case_modes(base, head)
    rows = tuple(_capped(r, found[r.case_id]) if r.case_id in found else r for r in comparison.rows)
    return replace(comparison, rows=rows), set(found)


def one_ab(effect: float, p_fast: float, seed: int, per_clock: bool) -> tuple[str, int]:
    rng = random.Random(seed)
    settings = DecisionSettings(looks=3)
    planned = GPU_FIRST_LOOK + EXTRA.default * (settings.looks - 1)
    lat: tuple[list[float], list[float]] = ([], [])
    dev: tuple[list[float], list[float]] = ([], [])
    n, looks = GPU_FIRST_LOOK, 0
    while True:
        for _ in range(n):
            for side, scale in ((0, 1.0), (1, 1.0 + effect)):
                lat[side].append(8.3e-3 * (FAST if rng.random() < p_fast else 1.0) * (1 + rng.gauss(0, 0.01)))
                dev[side].append(1.224e-3 * scale * (1 + rng.gauss(0, 0.001)))
        looks += 1
        base, head = _run(_case(lat[0], dev[0])), _run(_case(lat[1], dev[1]))
        cmp = compare_runs(base, head, settings, paired=True)
        cmp, moded = (cap_process_modes if per_clock else _before)(cmp, base, head)
        cmp, unreachable = mark_out_of_reach(cmp, settings, len(lat[0]), planned)
        go_on = [c for c in _to_continue(cmp, settings) if c not in moded and c not in unreachable]
        row = next(r for r in cmp.rows if r.metric == DEVICE_TIME)
        if not go_on or looks >= settings.looks:
            return row.verdict.value, len(lat[0])
        n = next_look_pairs(cmp, settings, len(lat[0]), EXTRA.default)


def main(seeds: int) -> None:
    for effect in (0.0, 0.006):
        for p_fast in (0.0, 0.15, 0.3):
            for per_clock in (False, True):
                out = [one_ab(effect, p_fast, 7000 + s, per_clock) for s in range(seeds)]
                pairs = [p for _, p in out]
                rule = "per clock" if per_clock else "before   "
                verdicts = dict(Counter(v for v, _ in out))
                mean = sum(pairs) / len(pairs)
                model = f"device {effect:+.1%}, fast host P={p_fast:.2f}, {rule}"
                print(f"{model}: {verdicts}, pairs {mean:.1f} (max {max(pairs)})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
