"""Synthetic runs and comparisons for the report tests and the size figures in docs/reports.md (no measuring)."""

from __future__ import annotations

import random
from dataclasses import replace

from perfci.compare.decide import DecisionSettings, compare_runs
from perfci.format.model import (
    CaseError,
    CaseResult,
    CaseSpec,
    CaseStatus,
    Comparison,
    MetricComparison,
    Round,
    RunResult,
    Verdict,
)
from perfci.metrics import case_metrics
from tests.conftest import make_case, make_run
from tests.formats import with_spec

HOSTILE = "<script>alert(1)</script>"
RUNTIMES = ("eager", "compile", "ort")


def _with_spec(case: CaseResult, workload: str, params: dict[str, str | int | float | bool]) -> CaseResult:
    return with_spec(case, CaseSpec(workload=workload, params=params, device="cpu", source="tests"))


def _gpu_telemetry(case: CaseResult, seed: int) -> CaseResult:
    rng = random.Random(seed)
    rounds = []
    for r in case.rounds:
        n = len(r.samples)
        gpu = {
            "sm_clock_mhz": [1980 - rng.randint(0, 300) * (i % 7 == 0) for i in range(n)],
            "mem_clock_mhz": [2619] * n,
            "power_w": [round(300 + 50 * rng.random(), 1) for _ in range(n)],
            "temperature_c": [60 + i // 4 for i in range(n)],
            "throttle": [["sw_power_cap"] if i % 9 == 0 else ["gpu_idle"] for i in range(n)],
        }
        rounds.append(
            replace(
                r,
                telemetry={**r.telemetry, "gpu": gpu, "energy_j": 1.5, "memory_device_bytes": 2**28},
                peak_device_bytes=2**30,
            )
        )
    return replace(case, rounds=tuple(rounds), metrics=case_metrics(tuple(rounds), case.flops, case.bytes))


def suite_pair(n: int, seed: int = 0, telemetry: bool = False) -> tuple[RunResult, RunResult]:
    """A baseline and a candidate run of `n` cases: a few regressions, improvements, noisy cases and errors;
    runtime triples; one hostile name."""
    base_cases, cand_cases = [], []
    for i in range(n):
        t = 1e-4 * (1 + (i * 37 % 100))
        name = f"case{i}"
        scale, noise = 1.0, 0.01
        if i % 50 == 1:
            scale = 1.3  # regression
        elif i % 50 == 2:
            scale = 0.7  # improvement
        elif i % 50 == 3:
            scale, noise = 1.2, 0.25  # inconclusive
        base = make_case(name, t, seed=seed)
        cand = make_case(name, t, seed=seed + 1, scale=scale, noise=noise)
        if i == 0:
            params: dict[str, str | int | float | bool] = {"name": HOSTILE}
            workload = "suite.hostile"
        elif i % 3 == 0 or i < 6:
            params = {"n": i // 3, "runtime": RUNTIMES[i % 3]}
            workload = "models.mlp"
        else:
            params = {"n": i}
            workload = "kernels.k"
        base, cand = _with_spec(base, workload, params), _with_spec(cand, workload, params)
        if telemetry:
            base, cand = _gpu_telemetry(base, i), _gpu_telemetry(cand, i + 1)
        if i % 50 == 4:
            cand = replace(
                cand, status=CaseStatus.ERROR, rounds=(), metrics=(), errors=(CaseError("crash", "worker died"),)
            )
        base_cases.append(base)
        cand_cases.append(cand)
    base_run = make_run(base_cases, "base-run")
    cand_run = make_run(cand_cases, "cand-run")
    cand_run = replace(cand_run, fingerprint={**cand_run.fingerprint, "cpu_logical_cores": 4})
    if telemetry:
        peaks = {"cpu": {"bandwidth_gbps": 4000.0, "flops": 6.0e14, "method": "synthetic"}}
        cand_run = replace(cand_run, fingerprint={**cand_run.fingerprint, "peaks": peaks})
    return base_run, cand_run


def _verdict(i: int) -> Verdict:
    return {1: Verdict.REGRESSION, 2: Verdict.IMPROVEMENT, 3: Verdict.INCONCLUSIVE, 4: Verdict.ERROR}.get(
        i % 50, Verdict.UNCHANGED
    )


def fixed_comparison(base: RunResult, cand: RunResult) -> Comparison:
    """A comparison with the verdicts `suite_pair` planted (independent of the decision rule in perfci.compare):
    latency, memory.host and (with telemetry) memory.device rows per case; ratio of medians, interval from
    the medians' intervals."""
    rows = []
    for i, (b, c) in enumerate(zip(base.cases, cand.cases, strict=True)):
        verdict = _verdict(i)
        if verdict is Verdict.ERROR:
            bm = b.metric("latency.median")
            rows.append(
                MetricComparison(c.id, "latency.median", verdict, "s", bm.value if bm else None, note="worker died")
            )
            continue
        for name in ("latency.median", "memory.host", "memory.device"):
            bm, cm = b.metric(name), c.metric(name)
            if bm is None or cm is None:
                continue
            ratio = cm.value / bm.value
            low = (cm.low or cm.value) / (bm.high or bm.value)
            high = (cm.high or cm.value) / (bm.low or bm.value)
            v = verdict if name == "latency.median" else Verdict.UNCHANGED
            rows.append(MetricComparison(c.id, name, v, bm.unit, bm.value, cm.value, ratio, low, high, 0.05))
    warning = "hardware differs: cpu_logical_cores: 2 (baseline) vs 4 (candidate)"
    return Comparison("main@abc123", "pr-42@def456", tuple(rows), (warning,))


def suite_comparison(n: int, telemetry: bool = False) -> tuple[RunResult, RunResult, Comparison]:
    base, cand = suite_pair(n, telemetry=telemetry)
    return base, cand, fixed_comparison(base, cand)


def decided_comparison(n: int) -> tuple[RunResult, RunResult, Comparison]:
    """The same pair through perfci's decision rule (for the CLI round trip)."""
    base, cand = suite_pair(n)
    return base, cand, compare_runs(base, cand, DecisionSettings(), ("main", "pr"))


def plain_round(index: int, samples: tuple[float, ...]) -> Round:
    return Round(index, 1, 1, samples, 0.0, "budget", 1)
