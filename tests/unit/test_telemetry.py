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


class LockingNvml:
    """A pynvml with `gpus` GPUs whose driver allows locking clocks on the first `allowed` of them (None: all);
    it records every lock and reset."""

    NVML_CLOCK_SM = 1

    def __init__(self, gpus: int = 2, allowed: int | None = None, base_mhz: int | None = 1365) -> None:
        self.gpus, self.allowed, self.base_mhz = gpus, allowed, base_mhz
        self.locked: dict[int, tuple[int, int]] = {}
        self.log: list[str] = []

    def nvmlInit(self) -> None:
        self.log.append("init")

    def nvmlShutdown(self) -> None:
        self.log.append("shutdown")

    def nvmlDeviceGetCount(self) -> int:
        return self.gpus

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetDefaultApplicationsClock(self, h: int, clock: int) -> int:
        if self.base_mhz is None:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return self.base_mhz

    def nvmlDeviceGetMaxClockInfo(self, h: int, clock: int) -> int:
        return 1980

    def nvmlDeviceSetGpuLockedClocks(self, h: int, low: int, high: int) -> None:
        if self.allowed is not None and h >= self.allowed:
            raise RuntimeError("Insufficient Permissions")
        self.locked[h] = (low, high)
        self.log.append(f"lock {h} {low}")

    def nvmlDeviceResetGpuLockedClocks(self, h: int) -> None:
        self.locked.pop(h, None)
        self.log.append(f"reset {h}")


def test_lock_clocks_locks_every_gpu_at_its_base_clock_and_restores_them() -> None:
    from perfci.profilers.nvml import locked_sm_clocks

    nvml, said = LockingNvml(), []
    with locked_sm_clocks(True, said.append, nvml) as lock:
        assert nvml.locked == {0: (1365, 1365), 1: (1365, 1365)}
        assert lock is not None and lock.words() == "SM clock locked at 1,365 MHz on 2 GPU(s)"
    assert nvml.locked == {} and nvml.log[-3:] == ["reset 0", "reset 1", "shutdown"]
    assert said == [
        "note: SM clock locked at 1,365 MHz on 2 GPU(s) for this run; restored when it ends.",
        "note: the GPU's clocks are back under the driver's control.",
    ]
    nvml = LockingNvml(gpus=1, base_mhz=None)  # no default applications clock: the maximum
    with pytest.raises(KeyError), locked_sm_clocks(True, said.append, nvml):
        assert nvml.locked == {0: (1980, 1980)}
        raise KeyError("the run failed")
    assert nvml.locked == {}  # restored when the run raises too


def test_lock_clocks_refuses_in_one_line_and_changes_nothing() -> None:
    from perfci.errors import UsageError
    from perfci.profilers.nvml import locked_sm_clocks

    nvml = LockingNvml(gpus=2, allowed=1)  # the second GPU refuses: the first is reset again
    with pytest.raises(UsageError) as refused, locked_sm_clocks(True, print, nvml):
        pytest.fail("the block ran with the clocks not locked")
    assert str(refused.value).startswith("--lock-clocks: the driver refused to lock the SM clock (Insufficient ")
    assert "\n" not in str(refused.value) and nvml.locked == {} and "reset 0" in nvml.log
    with pytest.raises(UsageError, match="NVML found no GPU"), locked_sm_clocks(True, print, LockingNvml(gpus=0)):
        pass
    untouched = LockingNvml()
    with locked_sm_clocks(False, print, untouched) as lock:
        assert lock is None
    assert untouched.log == []  # not asked: NVML is not even opened


def test_the_cli_refuses_lock_clocks_where_nvml_cannot_lock(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`perfci run --lock-clocks` on a machine whose NVML cannot lock (here: a fake that refuses): exit 2, one
    sentence and its hint, nothing measured."""
    import functools

    from typer.testing import CliRunner

    from perfci.cli import app
    from perfci.cli import run as run_cli
    from perfci.profilers.nvml import locked_sm_clocks

    refusing = LockingNvml(gpus=1, allowed=0)
    monkeypatch.setattr(run_cli, "locked_sm_clocks", functools.partial(locked_sm_clocks, nvml=refusing))
    (tmp_path / "w.py").write_text("import perfci\n\n@perfci.workload()\ndef f(ctx):\n    return lambda: None\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "w.py"), "--lock-clocks", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "--lock-clocks: the driver refused to lock the SM clock (Insufficient Permissions)." in result.output
    assert not (out / "results.json").exists() and refusing.locked == {}
