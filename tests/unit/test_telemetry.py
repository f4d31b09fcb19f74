"""NVML telemetry and the throttle rule with a fake NVML module (the CPU twin of the H200 check)."""

from __future__ import annotations

from typing import Any

import pytest

from perfci.format.model import Round
from perfci.metrics import case_metrics
from perfci.profilers.telemetry import NvmlProbe, apply_throttle_rule, reason_names, summarize
from tests.fakes import FakeNvml


def test_snapshot_reads_every_field() -> None:
    snap = NvmlProbe(FakeNvml([0x4 | 0x1]), handle=None).snapshot()
    assert snap["sm_clock_mhz"] == 1980 and snap["mem_clock_mhz"] == 3201
    assert snap["power_w"] == pytest.approx(450.0)
    assert snap["temperature_c"] == 51
    assert snap["throttle"] == ["gpu_idle", "sw_power_cap"]
    assert snap["memory_used_bytes"] == 2**30


def test_missing_fields_become_none() -> None:
    class Partial(FakeNvml):
        def nvmlDeviceGetTotalEnergyConsumption(self, h: Any) -> int:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    assert NvmlProbe(Partial([0]), None).snapshot()["energy_mj"] is None


def test_reason_bits() -> None:
    assert reason_names(0x40 | 0x8) == ["hw_slowdown", "hw_thermal_slowdown"]


def test_thermal_samples_are_dropped_power_cap_only_flagged() -> None:
    snaps = [{"throttle": []}] * 8 + [{"throttle": ["hw_thermal_slowdown"]}, {"throttle": ["sw_power_cap"]}]
    samples = [1.0] * 8 + [2.0, 1.1]
    kept, flagged, dropped = apply_throttle_rule(samples, snaps, min_keep=5)
    assert (flagged, dropped) == (2, 1)
    assert kept == (1.0,) * 8 + (1.1,)


def test_nothing_dropped_when_too_few_would_remain() -> None:
    snaps = [{"throttle": ["hw_slowdown"]}] * 8 + [{"throttle": []}] * 2
    kept, flagged, dropped = apply_throttle_rule([1.0] * 10, snaps, min_keep=5)
    assert (len(kept), flagged, dropped) == (10, 8, 0)


def test_energy_per_call_and_metric() -> None:
    probe = NvmlProbe(FakeNvml([0]), None)
    snaps = [probe.snapshot() for _ in range(3)]
    end = probe.snapshot()
    tel = summarize(snaps, snaps[0], end, calls=300)
    assert tel["energy_j"] == pytest.approx(3 * 0.9)
    assert tel["energy_per_call_j"] == pytest.approx(2.7 / 300)
    assert tel["gpu"]["sm_clock_mhz"] == [1980, 1980, 1980]
    rounds = tuple(
        Round(
            index=i,
            pid=i,
            iterations=1,
            samples=(1e-3,) * 3,
            warmup_s=0.0,
            stop_reason="budget",
            threads=1,
            telemetry={"energy_per_call_j": 0.009 + i * 1e-4},
        )
        for i in range(3)
    )
    energy = next(m for m in case_metrics(rounds, None, None) if m.name == "energy_per_call")
    assert energy.unit == "J" and energy.value == pytest.approx(0.0091)


def test_pct_of_peak_metrics() -> None:
    rounds = tuple(
        Round(index=i, pid=i, iterations=1, samples=(2e-3,) * 5, warmup_s=0.0, stop_reason="budget", threads=1)
        for i in range(3)
    )
    metrics = {m.name: m for m in case_metrics(rounds, 2e9, 4e7, {"flops": 4e12, "bandwidth_gbps": 40.0})}
    assert metrics["flops"].value == pytest.approx(1e12)
    assert metrics["flops.pct_peak"].value == pytest.approx(25.0)
    assert metrics["bandwidth"].value == pytest.approx(20.0)
    assert metrics["bandwidth.pct_peak"].value == pytest.approx(50.0)


def test_energy_block_brackets_a_contiguous_run_of_calls() -> None:
    nvml = FakeNvml([0])
    probe = NvmlProbe(nvml, None)
    now = [0.0]
    blocks: list[int] = []

    def run_block(n: int) -> None:
        blocks.append(n)
        now[0] += 0.1

    from perfci.profilers.telemetry import energy_block

    start, end, calls = energy_block(probe, run_block, 4, 0.5, lambda: now[0])
    assert blocks == [4] * 5 and calls == 20
    assert end["energy_mj"] - start["energy_mj"] == 900  # one read apart: nothing between them but the block
