"""A case's own memory (profilers/case_memory.py) with injected readers: host RSS and a fake CUDA allocator."""

from __future__ import annotations

from perfci.profilers.case_memory import CaseMemory, DeviceMemory, HostMemory
from tests.fakes import FakeCudaAllocator, fake_cuda_torch

MIB = 2**20


class FakeRss:
    """RSS and its high-water mark, moved by the fake cases below."""

    def __init__(self, rss: int) -> None:
        self.rss = rss
        self.hwm = rss

    def grow(self, n: int) -> None:
        self.rss += n
        self.hwm = max(self.hwm, self.rss)

    def reset(self) -> bool:
        self.hwm = self.rss
        return True

    def host(self) -> HostMemory:
        return HostMemory(rss=lambda: self.rss, peak=lambda: self.hwm, reset_peak=self.reset, trim=lambda: True)


def _measure(rss: FakeRss, gpu: FakeCudaAllocator, resident: int, transient: int) -> dict[str, int]:
    """One case: set-up keeps `resident` bytes on host and device; a call allocates and frees `transient`."""
    probe = CaseMemory(rss.host(), DeviceMemory(fake_cuda_torch(gpu)))
    probe.start()
    rss.grow(resident)
    gpu.alloc(resident)
    probe.set_up()

    def call() -> None:
        for grow in (rss.grow, gpu.alloc):
            grow(transient)
        rss.grow(-transient)
        gpu.free(transient)

    probe.call(call)
    return probe.telemetry()


def test_device_memory_is_the_cases_own_beside_other_cases() -> None:
    """Issue 15's three cases on a fake GPU: alone and after the others, the same figures; never the worker's
    total (the runtime's 300 MiB and the other cases' tensors are left out)."""
    cases = {"big_resident": (400_000_000, 4096), "small_case": (4096, 0), "transient_alloc": (0, 200_000_000)}
    alone = {}
    for name, (resident, transient) in cases.items():
        alone[name] = _measure(FakeRss(300 * MIB), FakeCudaAllocator(300 * MIB), resident, transient)
    rss, gpu = FakeRss(300 * MIB), FakeCudaAllocator(300 * MIB)
    together = {name: _measure(rss, gpu, *sizes) for name, sizes in cases.items()}
    assert together == alone
    assert alone["big_resident"]["memory_device_bytes"] == 400_000_000 + 4096
    assert alone["small_case"]["memory_device_bytes"] == 4096
    assert alone["transient_alloc"]["memory_device_bytes"] == 200_000_000
    assert alone["transient_alloc"]["memory_device_resident_bytes"] == 0
    assert together["transient_alloc"]["memory_host_bytes"] == 200_000_000
    assert gpu.syncs > 0  # the allocator is read only after the stream's work is done


def test_host_memory_without_a_resettable_high_water_mark_keeps_the_resident_part() -> None:
    rss = FakeRss(100)
    probe = HostMemory(rss=lambda: rss.rss, peak=lambda: rss.hwm, reset_peak=lambda: False, trim=lambda: False)
    probe.start()
    rss.grow(50)
    probe.set_up()
    probe.before_call()
    rss.grow(10)
    probe.after_call()
    assert probe.telemetry() == {"memory_host_bytes": 50, "memory_host_resident_bytes": 50}
