"""How contended the CPU was while a round measured: read before and after the round, kept in its telemetry.

- `cpu_wait`: of the time this process's threads were runnable during the round, the share they spent waiting
  for a CPU instead of running on one: the run-queue wait of Linux `/proc/self/task/*/schedstat` summed over
  the threads, against that wait plus the process's CPU time (`time.process_time`, exact; schedstat's own run
  time lags by up to a scheduler tick, which made short rounds read 0 or 0.5). 0 on a quiet machine; about
  1/3 for a single-threaded loop while two
  other busy processes share two cores. Idle time (sleeping, waiting for a GPU or a pipe) is in neither sum, so
  a round that mostly waits for the other side of an A/B is not diluted.
- `cpu_pressure`: the share of the round's wall time in which some task of the machine (or of the container's
  cgroup) waited for a CPU (`/proc/pressure/cpu`, "some"). Context only: it also sees other processes' waits.
- `cpu_steal`: the share of the machine's CPU time a hypervisor gave to other guests (`/proc/stat`).
- `speed_probe_s`: the seconds a fixed pure-Python loop took just before and just after the round (`speed_probe`,
  the faster of three runs each). A virtual machine's speed can move without any of the counters above seeing
  it: on the 2-core CI VM (2026-12-06) the same loop ran at 0.7 or 1.3 ms in phases of 0.1 s to several seconds,
  with no steal and no waiting, and two pytest sessions of unchanged code then differed by 1.6-1.7x. The probe
  is how a comparison of separate jobs sees that (compare/contended.py, `unsteady_machine`).

Each is absent where the platform does not offer it (macOS, Windows, a kernel without schedstats). The readers
take the `/proc` root, so tests give them a folder of fake files. How a comparison uses `cpu_wait`:
compare/contended.py.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROC = Path("/proc")


@dataclass(frozen=True)
class CpuCounters:
    """Cumulative counters at one moment; `None` where the platform has no such counter."""

    wall_s: float
    run_s: float | None  # this process's CPU time (None where the wait cannot be read)
    wait_s: float | None  # this process's threads: time runnable on a run queue
    pressure_s: float | None  # PSI cpu "some" total
    steal_ticks: int | None
    total_ticks: int | None


def _run_queue_wait(proc: Path) -> float | None:
    """Seconds this process's threads have waited on a run queue (a wait is counted when it ends, so the figure
    is exact for the reading thread, which is running)."""
    wait = 0
    try:
        tasks = list((proc / "self" / "task").iterdir())
    except OSError:
        return None
    seen = False
    for task in tasks:
        try:
            wait, seen = wait + int((task / "schedstat").read_text().split()[1]), True
        except (OSError, ValueError, IndexError):  # a thread that ended between the listing and the read
            continue
    return wait / 1e9 if seen else None


def _pressure(proc: Path) -> float | None:
    try:
        for line in (proc / "pressure" / "cpu").read_text().splitlines():
            if line.startswith("some "):
                total = next(f for f in line.split() if f.startswith("total="))
                return int(total.removeprefix("total=")) / 1e6
    except (OSError, ValueError, StopIteration):
        return None
    return None


def _stat_ticks(proc: Path) -> tuple[int, int] | None:
    try:
        first = (proc / "stat").read_text().split("\n", 1)[0].split()
        ticks = [int(x) for x in first[1:]]
    except (OSError, ValueError):
        return None
    if first[:1] != ["cpu"] or len(ticks) < 8:
        return None
    return ticks[7], sum(ticks[:8])  # steal; user..steal (guest time is already inside user)


def read_counters(
    proc: Path = PROC, clock: Callable[[], float] = time.monotonic, cpu: Callable[[], float] = time.process_time
) -> CpuCounters:
    wait, ticks = _run_queue_wait(proc), _stat_ticks(proc)
    return CpuCounters(
        wall_s=clock(),
        run_s=cpu() if wait is not None else None,
        wait_s=wait,
        pressure_s=_pressure(proc),
        steal_ticks=ticks[0] if ticks else None,
        total_ticks=ticks[1] if ticks else None,
    )


def contention(before: CpuCounters, after: CpuCounters) -> dict[str, float]:
    """The round's `cpu_wait`, `cpu_pressure` and `cpu_steal` (fractions from 0 to 1), those both readings have."""
    out: dict[str, float] = {}
    if None not in (before.run_s, before.wait_s, after.run_s, after.wait_s):
        run = max(0.0, after.run_s - before.run_s)  # type: ignore[operator]
        wait = max(0.0, after.wait_s - before.wait_s)  # type: ignore[operator]
        if run + wait > 0:
            out["cpu_wait"] = wait / (run + wait)
    wall = after.wall_s - before.wall_s
    if wall > 0 and before.pressure_s is not None and after.pressure_s is not None:
        out["cpu_pressure"] = min(1.0, max(0.0, (after.pressure_s - before.pressure_s) / wall))
    if None not in (before.steal_ticks, before.total_ticks, after.steal_ticks, after.total_ticks):
        total = after.total_ticks - before.total_ticks  # type: ignore[operator]
        if total > 0:
            out["cpu_steal"] = max(0.0, (after.steal_ticks - before.steal_ticks) / total)  # type: ignore[operator]
    return out


PROBE_LOOP = 10_000  # additions in the speed probe's loop: about 0.3-0.7 ms of CPython on a current CPU
PROBE_RUNS = 3  # the probe is the fastest of this many runs: an interrupt inside one run is not a speed


def speed_probe(clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds of a fixed pure-Python loop (the fastest of PROBE_RUNS runs): the machine's speed at this moment,
    as far as interpreted code sees it. It allocates nothing and touches little memory, so a process's memory
    layout moves it little."""
    best = math.inf
    for _ in range(PROBE_RUNS):
        start = clock()
        total = 0
        for i in range(PROBE_LOOP):
            total += i
        best = min(best, clock() - start)
    return best


class ContentionWatch:
    """Counters read at `start()`; `stop()` gives the fractions since then, and the speed probe's seconds taken at
    both ends (`probe`: None leaves the probe out, as tests of the counters do)."""

    def __init__(
        self,
        proc: Path = PROC,
        clock: Callable[[], float] = time.monotonic,
        cpu: Callable[[], float] = time.process_time,
        probe: Callable[[], float] | None = speed_probe,
    ) -> None:
        self._proc, self._clock, self._cpu, self._probe = proc, clock, cpu, probe
        self._start: CpuCounters | None = None
        self._speed: float | None = None

    def start(self) -> None:
        self._speed = self._probe() if self._probe is not None else None
        self._start = read_counters(self._proc, self._clock, self._cpu)

    def stop(self) -> dict[str, Any]:
        if self._start is None:
            return {}
        out: dict[str, Any] = contention(self._start, read_counters(self._proc, self._clock, self._cpu))
        if self._probe is not None and self._speed is not None:
            out["speed_probe_s"] = [self._speed, self._probe()]
        return out
