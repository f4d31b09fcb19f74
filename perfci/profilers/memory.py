"""Host memory of the current process: resident set size now and its high-water mark, and the page faults
taken inside timed blocks."""

from __future__ import annotations

import resource
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from perfci.profilers.timing import BlockTimer


def current_rss() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


def peak_rss() -> int:
    """High-water mark of RSS in bytes (since process start or the last `reset_peak_rss`)."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(usage if sys.platform == "darwin" else usage * 1024)


def reset_peak_rss() -> bool:
    """Reset the RSS high-water mark (Linux: write 5 to /proc/self/clear_refs). False where it cannot."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def minor_faults() -> int:
    """Minor page faults of this process so far (getrusage)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)


@dataclass
class FaultCount:
    """Page faults taken inside timed blocks: `wrap` a block timer, read `per_call` at the end.

    A call that page-faults is paying for memory the allocator handed back to the OS and must map again; how
    often that happens can depend on the allocator's state in one process and not in the next (see
    docs/measurement.md), so the count per call goes into every round's telemetry. Counted outside the timed
    region (before and after each block)."""

    read: Callable[[], int] = field(default=minor_faults)
    faults: int = 0
    calls: int = 0

    def wrap(self, timer: BlockTimer) -> BlockTimer:
        def counted(fn: Callable[[], object], iterations: int) -> float:
            before = self.read()
            elapsed = timer(fn, iterations)
            self.faults += self.read() - before
            self.calls += iterations
            return elapsed

        return counted

    def per_call(self) -> float | None:
        return self.faults / self.calls if self.calls else None
