"""Shared fixtures: small synthetic runs built in memory (no measuring)."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest

from perfci.format.model import CaseResult, CaseSpec, CaseStatus, GitInfo, Round, RunResult
from perfci.metrics import case_metrics


def make_case(
    name: str, base_s: float, rounds: int = 5, seed: int = 0, scale: float = 1.0, noise: float = 0.01
) -> CaseResult:
    rng = random.Random(f"{name}:{seed}")
    rs = []
    for i in range(rounds):
        shift = 1.0 + rng.gauss(0.0, noise)
        samples = tuple(base_s * 10 * shift * scale * (1.0 + abs(rng.gauss(0.0, noise))) for _ in range(20))
        rs.append(
            Round(
                index=i,
                pid=1000 + i,
                iterations=10,
                samples=samples,
                warmup_s=0.05,
                stop_reason="budget",
                threads=1,
                peak_rss_bytes=100_000_000,
                rss_increase_bytes=1_000_000,
                telemetry={"memory_host_bytes": 1_000_000},
            )
        )
    spec = CaseSpec(workload=f"t.{name}", params={"n": 8}, device="cpu", source="tests")
    return CaseResult.of(spec, CaseStatus.OK, tuple(rs), case_metrics(tuple(rs), 1e6, 1e5), (), 1e6, 1e5)


def make_run(cases: list[CaseResult], run_id: str | None = None) -> RunResult:
    """A synthetic run; each call is a different run (its own id) unless `run_id` is given."""
    return RunResult(
        run_id=run_id or f"run-{uuid.uuid4().hex[:8]}",
        started_at="2026-11-30T00:00:00.000000Z",
        finished_at="2026-11-30T00:01:00.000000Z",
        fingerprint={"cpu_model": "test cpu", "cpu_logical_cores": 2, "gpus": []},
        git=GitInfo(commit="abc123", branch="main", dirty=False),
        settings={"rounds": len(cases[0].rounds) if cases else 0},
        cases=tuple(cases),
    )


@pytest.fixture
def sample_run() -> RunResult:
    return make_run([make_case("alpha", 1e-3), make_case("beta", 2e-3), make_case("gamma", 5e-4)])


@pytest.fixture
def tmp_results(tmp_path: Path, sample_run: RunResult) -> Path:
    from perfci.format.schema import dump_results

    path = tmp_path / "results.json"
    dump_results(sample_run, path)
    return path
