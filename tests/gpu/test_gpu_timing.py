"""Real CUDA timing paths (run on a GPU by benchmarks/gpu_check.sh). Their CPU twins are in tests/unit:
test_cuda_timing.py and test_telemetry.py."""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (CUDA not available)"),
]

from perfci.profilers.cuda_timing import cuda_timer  # noqa: E402
from perfci.profilers.telemetry import open_probe  # noqa: E402
from perfci.profilers.timing import TimingSettings, measure  # noqa: E402


def _work() -> tuple[object, float]:
    x = torch.randn(2**24, device="cuda")
    return (lambda: x.mul_(1.0000001)), 2.0 * x.numel() * 4


@pytest.mark.parametrize("mode", ["hot", "cold", "graph"])
def test_modes_measure_plausible_bandwidth(mode: str) -> None:
    fn, nbytes = _work()
    setup = cuda_timer(torch, mode)
    out = measure(fn, time.perf_counter, TimingSettings(budget_s=0.2), setup.timer, setup.fixed_iterations)
    per_call = sorted(s / out.iterations for s in out.samples)[len(out.samples) // 2]
    gbps = nbytes / per_call / 1e9
    assert 100 < gbps < 6000, gbps  # an H200 copies at ~4.3 TB/s; anything outside is a timing bug


def test_events_agree_with_synchronised_host_clock() -> None:
    fn, _ = _work()
    setup = cuda_timer(torch, "hot")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    ev = setup.timer(fn, 200)
    torch.cuda.synchronize()
    host = time.perf_counter() - t0
    assert 0.8 * host < ev <= host * 1.01


def test_nvml_probe_reads_clocks_and_power() -> None:
    probe = open_probe(0)
    assert probe is not None
    snap = probe.snapshot()
    assert snap["sm_clock_mhz"] and snap["mem_clock_mhz"] and snap["power_w"]


def test_a_profiled_slice_records_its_clock_and_a_steady_case_profiles_twice_the_calls() -> None:
    """The device clock's slice on a real GPU (CPU twin: tests/unit/test_steady_clock.py): the SM clock before and
    after it, no throttled slice on an idle GPU, and a case decided on its device clock profiling 2x the calls."""
    from types import SimpleNamespace

    from perfci.profilers.device_time import STEADY_CALLS_FACTOR
    from perfci.profilers.kineto import MAX_CALLS
    from tests.fakes import device_clock

    fn, _ = _work()  # a call of ~45 us: the slice profiles the most calls it may
    for steady, calls in ((False, MAX_CALLS), (True, MAX_CALLS * STEADY_CALLS_FACTOR)):
        s = SimpleNamespace(
            torch=torch, probe=open_probe(0), steady=steady, sampler=SimpleNamespace(fn=fn, iterations=1)
        )
        telemetry: dict[str, object] = {}
        device = device_clock(s, (1e-4,), telemetry)  # type: ignore[arg-type]
        assert device is not None and len(device.samples) + device.dropped_calls == calls
        if s.probe is not None:
            clocks = telemetry["device_clock_sm_mhz"]
            assert isinstance(clocks, list) and all(100 < c < 4000 for c in clocks)
            assert "device_clock_left_out" not in telemetry
