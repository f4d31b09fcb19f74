"""Sustained GPU mode, CPU twin: a fake GPU that heats up under load (its SM clock falls, its power rises, NVML
follows it), the sustained block timer on a fake `torch`, and `--gpu-mode` / `gpu_mode` resolution."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfci.api.ab import ABRequest, ab_settings
from perfci.api.run import RunRequest, run_settings
from perfci.api.settings import Settings
from perfci.config import Config
from perfci.errors import UsageError
from perfci.profilers.cuda_timing import cuda_timer
from perfci.profilers.telemetry import NvmlProbe
from perfci.profilers.timing import Sampler, TimingSettings, clock_block_timer, sustain
from tests.fakes import FakeGpu, HeatingGpu, fake_torch

SETTINGS = TimingSettings(sustain_window_s=1.0, sustain_tol=0.02, sustain_max_s=15.0)


def _run_block(gpu: HeatingGpu, iterations: int = 10) -> object:
    timer = clock_block_timer(gpu)
    return lambda: timer(gpu.kernel, iterations)


def test_sustain_runs_until_nvml_clock_and_power_stop_drifting() -> None:
    gpu = HeatingGpu(call_s=1e-3, tau_s=2.0)
    probe = NvmlProbe(gpu.nvml(), None)

    def read() -> dict[str, float | None]:
        snap = probe.snapshot()
        return {k: snap[k] for k in ("sm_clock_mhz", "power_w")}

    out = sustain(_run_block(gpu), gpu, SETTINGS, read)  # type: ignore[arg-type]
    assert out.steady and out.tracked == ("power_w", "sm_clock_mhz")
    # two windows at least, and long enough for the heating (tau 2 s) to level off, but under the cap
    assert 4.0 < out.settle_s < SETTINGS.sustain_max_s
    assert out.readings["sm_clock_mhz"] == pytest.approx(1700, rel=0.03)
    assert out.readings["power_w"] == pytest.approx(700, rel=0.03)
    # the block time reached is the sustained clock's, not the boost clock's
    assert out.readings["block_s"] == pytest.approx(10e-3 * 1980 / 1700, rel=0.03)
    telemetry = out.telemetry()
    assert {"settle_s", "steady", "sm_clock_mhz", "power_w"} <= set(telemetry)


def test_without_nvml_sustain_follows_the_block_time() -> None:
    gpu = HeatingGpu(call_s=1e-3, tau_s=2.0)
    out = sustain(_run_block(gpu), gpu, SETTINGS)  # type: ignore[arg-type]
    assert out.steady and out.tracked == ("block_s",)
    assert out.readings["block_s"] == pytest.approx(10e-3 * 1980 / 1700, rel=0.03)


def test_sustain_stops_at_its_time_cap() -> None:
    gpu = HeatingGpu(call_s=1e-3, tau_s=200.0)  # heats far slower than the cap
    out = sustain(_run_block(gpu), gpu, TimingSettings(sustain_max_s=3.0))  # type: ignore[arg-type]
    assert not out.steady
    assert 3.0 <= out.settle_s < 3.1


def test_sustained_timer_keeps_the_gpu_busy_while_the_host_waits() -> None:
    gpu = FakeGpu(kernel_s=1e-5)
    setup = cuda_timer(fake_torch(gpu), "sustained")
    gpu.log.clear()
    elapsed = setup.timer(gpu.kernel, 4)
    # untimed calls are enqueued after the end event and before the host waits for it
    assert gpu.log == ["record", *["kernel"] * 4, "record", *["kernel"] * 3, "sync"]
    assert elapsed == pytest.approx(4e-5)


def test_before_slice_runs_before_every_slice() -> None:
    gpu = HeatingGpu(call_s=1e-3)
    slices: list[float] = []
    sampler = Sampler(gpu.kernel, clock_block_timer(gpu), gpu, 2, TimingSettings(budget_s=0.02, min_samples=2))
    sampler.before_slice = lambda: slices.append(gpu.now)
    sampler.run_slice(0.01, final=False)
    sampler.run_slice(0.01, final=True)
    assert len(slices) == 2


def test_gpu_mode_flag_beats_the_configuration_and_reaches_the_workers(tmp_path: Path) -> None:
    settings = Settings({}, Config(source=tmp_path / "perfci.toml", gpu_mode="cold"))
    assert settings.gpu_mode(None) == "cold"
    assert settings.gpu_mode("sustained") == "sustained"  # key and flag set at once: the flag wins
    assert run_settings(settings, RunRequest(gpu_mode="sustained")).timing.gpu_mode == "sustained"
    assert run_settings(settings, RunRequest()).timing.gpu_mode == "cold"
    assert ab_settings(settings, ABRequest("HEAD", gpu_mode="sustained")).run.timing.gpu_mode == "sustained"
    assert Settings().gpu_mode(None) == "hot"
    with pytest.raises(UsageError, match="--gpu-mode"):
        settings.gpu_mode("warm")
    with pytest.raises(UsageError, match="gpu_mode"):
        Settings({}, Config(gpu_mode="warm")).gpu_mode(None)
