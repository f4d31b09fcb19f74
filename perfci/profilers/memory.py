"""Host memory of the current process: resident set size now and its high-water mark."""

from __future__ import annotations

import resource
import sys
from pathlib import Path


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
