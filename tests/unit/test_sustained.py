"""Sustained GPU mode, CPU twin: a fake GPU that heats up under load (its SM clock falls, its power rises, NVML
follows it), the sustained block timer on a fake `torch`, and `--gpu-mode` / `gpu_mode` resolution."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from rich.text import Text

from perfci.api.ab import ABRequest, ab_settings
from perfci.api.run import RunRequest, run_settings
from perfci.api.settings import Settings
from perfci.config import Config
from perfci.errors import UsageError
from perfci.format.model import CaseResult, CaseSpec, CaseStatus, Direction, Metric, RunResult
from perfci.metrics.registry import LATENCY
from perfci.profilers.cuda_timing import cuda_timer
from perfci.profilers.telemetry import NvmlProbe
from perfci.profilers.timing import Sampler, TimingSettings, clock_block_timer, sustain
from perfci.reports.gpu_modes import burst_sustained_notes
from perfci.reports.html import render_html
from perfci.reports.markdown import render_markdown
from perfci.reports.terminal import run_table
from tests.fakes import FakeGpu, HeatingGpu, fake_torch
from tests.report_fixtures import plain_round

SETTINGS = TimingSettings(sustain_window_s=1.0, sustain_tol=0.02, sustain_max_s=15.0)


def _run_block(gpu: HeatingGpu, iterations: int = 10) -> Callable[[], float]:
    timer = clock_block_timer(gpu)
    return lambda: timer(gpu.kernel, iterations)


def _reader(gpu: HeatingGpu) -> Callable[[], dict[str, float | None]]:
    probe = NvmlProbe(gpu.nvml(), None)

    def read() -> dict[str, float | None]:
        snap = probe.snapshot()
        return {k: snap[k] for k in ("sm_clock_mhz", "power_w")}

    return read


def test_sustain_runs_until_nvml_clock_and_power_stop_drifting() -> None:
    gpu = HeatingGpu(call_s=1e-3, tau_s=2.0)
    out = sustain(_run_block(gpu), gpu, SETTINGS, _reader(gpu))
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
    out = sustain(_run_block(gpu), gpu, SETTINGS)
    assert out.steady and out.tracked == ("block_s",)
    # the block time drifts by less than 2% a window once within a few % of its end point
    assert out.readings["block_s"] == pytest.approx(10e-3 * 1980 / 1700, rel=0.05)


def test_sustain_stops_at_its_time_cap() -> None:
    gpu = HeatingGpu(call_s=1e-3, tau_s=20.0)  # power still rises by > 2% a window when the cap comes
    out = sustain(_run_block(gpu), gpu, TimingSettings(sustain_max_s=3.0), _reader(gpu))
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
    sampler = Sampler(gpu.kernel, clock_block_timer(gpu), gpu, 2, TimingSettings(min_samples=100))
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
    assert ab_settings(settings, ABRequest(base_rev="HEAD", gpu_mode="sustained")).run.timing.gpu_mode == "sustained"
    assert Settings().gpu_mode(None) == "hot"
    with pytest.raises(UsageError, match="--gpu-mode"):
        settings.gpu_mode("warm")
    with pytest.raises(UsageError, match="gpu_mode"):
        Settings({}, Config(gpu_mode="warm")).gpu_mode(None)


def _gemm(mode: str, median_s: float) -> CaseResult:
    telemetry = (
        {"sustained": {"settle_s": 12.0, "sm_clock_mhz": 1710.0, "power_w": 699.0}} if mode == "sustained" else {}
    )
    rounds = (replace(plain_round(0, (median_s,)), telemetry=telemetry),)
    spec = CaseSpec("gpu.gemm", {"n": 8192, "gpu_mode": mode}, "cuda")
    latency = Metric(LATENCY, "s", Direction.LOWER, median_s)
    return CaseResult.of(spec, CaseStatus.OK, rounds, (latency,))


def _run(*cases: CaseResult) -> RunResult:
    return RunResult("r", "", "", {}, None, {}, cases)


def test_report_notes_where_burst_and_sustained_differ_by_more_than_3_percent() -> None:
    run = _run(_gemm("hot", 1.436e-3), _gemm("sustained", 1.658e-3))
    notes = burst_sustained_notes(run)
    assert len(notes) == 1 and "+15.5%" in notes[0] and "1710 MHz, 699 W" in notes[0]
    assert "sustained median +15.5%" in render_markdown(run, None)
    html = render_html(run, None)  # the HTML report and the terminal table say it too
    assert '<p class="note gpu-mode">note: gpu.gemm[n=8192,gpu_mode=sustained]@cuda: sustained median +15.5%' in html
    caption = run_table(run).caption
    assert isinstance(caption, Text) and caption.plain == f"note: {notes[0]}"
    assert run_table(_run(_gemm("hot", 1.60e-3), _gemm("sustained", 1.64e-3))).caption is None
    assert burst_sustained_notes(_run(_gemm("hot", 1.60e-3), _gemm("sustained", 1.64e-3))) == []  # 2.5%
    assert burst_sustained_notes(_run(_gemm("sustained", 1.64e-3))) == []  # only one of them


def test_sustained_blocks_are_long_enough_that_the_gpu_never_idles() -> None:
    """A 200 us kernel: hot mode calibrates 2 ms blocks; sustained mode 100 ms blocks, so the half block the
    sustained timer queues behind each one (50 ms) outlasts the host's work between blocks by far (an H200 ran a
    GEMM at 500 W and boost clock with 2 ms blocks, at the 700 W cap back to back: docs/gpu.md)."""
    from perfci.profilers.timing import calibrate, sustained_settings, timer_overhead

    gpu = HeatingGpu(call_s=2e-4, tau_s=1e9)  # no heating: the block length alone
    timer = clock_block_timer(gpu)
    overhead = timer_overhead(gpu)
    hot = calibrate(gpu.kernel, timer, overhead, TimingSettings())
    sustained = sustained_settings(TimingSettings())
    long = calibrate(gpu.kernel, timer, overhead, sustained)
    assert hot * 2e-4 == pytest.approx(2e-3, rel=0.01)
    assert sustained.min_sample_s == sustained.sustain_block_s == 0.1
    assert long * 2e-4 == pytest.approx(0.1, rel=0.01)
    assert (long // 2 + 1) * 2e-4 >= 0.05  # the untimed calls queued behind each block (cuda_timing)
    assert sustained_settings(TimingSettings(min_sample_s=0.5)).min_sample_s == 0.5  # never shorter than asked


def test_report_pairs_cold_with_sustained_cold_and_not_with_sustained() -> None:
    cold, sustained_cold = _gemm("cold", 1.50e-3), _gemm("sustained-cold", 1.62e-3)
    notes = burst_sustained_notes(_run(cold, sustained_cold))
    assert len(notes) == 1 and "sustained median +8.0% against burst" in notes[0] and "gpu_mode=cold]" in notes[0]
    # a cold burst says nothing about the back-to-back (warm-L2) sustained figure
    assert burst_sustained_notes(_run(_gemm("cold", 1.50e-3), _gemm("sustained", 1.62e-3))) == []
