"""CPU lists for pinning workers: the `--cpus` option and the `cpus` configuration key.

A list is written the way Linux writes them (`taskset -c`, `/sys/.../cpulist`): numbers and ranges separated
by commas, e.g. "3", "2-3" or "0,4-7". Pure parsing and checking; the runner applies the result.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

MAX_CPU = 8_191  # the highest CPU number of a Linux kernel (NR_CPUS is at most 8,192)


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """The sorted CPU numbers of a list like "0,4-7"; ValueError says what is wrong."""
    cpus: set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            raise ValueError(f"empty item in CPU list {text!r}")
        first, sep, last = part.partition("-")
        if not first.isdigit() or (sep and not last.isdigit()):
            raise ValueError(f"{part!r} in {text!r} is not a CPU number or a range like 2-3")
        lo, hi = int(first), int(last) if sep else int(first)
        if hi < lo:
            raise ValueError(f"range {part!r} in {text!r} runs backwards")
        if hi > MAX_CPU:  # before the range is expanded: "0-99999999999" would fill the memory
            raise ValueError(f"CPU {hi} in {text!r} is beyond the highest CPU number Linux allows ({MAX_CPU})")
        cpus.update(range(lo, hi + 1))
    return tuple(sorted(cpus))


def format_cpu_list(cpus: Iterable[int]) -> str:
    """The shortest list text for `cpus`, e.g. (0, 4, 5, 6, 7) -> "0,4-7"."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def unavailable(cpus: Iterable[int], available: Iterable[int]) -> str | None:
    """None when every CPU in `cpus` is one this process may run on, else a message naming what is missing."""
    allowed = set(available)
    missing = sorted(set(cpus) - allowed)
    if not missing:
        return None
    return f"CPU(s) {format_cpu_list(missing)} not available to this process (available: {format_cpu_list(allowed)})"


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity; the machine's count where there is no affinity call)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1
