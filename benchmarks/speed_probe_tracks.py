"""Whether the speed probe (perfci/profilers/contention.py, `speed_probe`) follows the speed of real code on this
machine: in one process for SECONDS, blocks of 0.1 s alternate the probe with three pure-Python workloads (string
building and splitting, sorting, a dict of 2,000 keys). Prints, per workload, the spread of its block medians
(slowest over fastest) and the correlation of its log time with the probe's over the blocks: near 1, the
machine's speed moved and the probe saw it; near 0 with a wide probe spread, the probe moved on its own.

Usage: python benchmarks/speed_probe_tracks.py [SECONDS]   (perfci importable; default 6)
"""

from __future__ import annotations

import math
import statistics
import sys
import time

from perfci.profilers.contention import speed_probe


def _words() -> object:
    return " ".join(f"w{i}" for i in range(500)).split()


def _sort() -> object:
    return sorted(range(3000, 0, -3))


def _dict() -> object:
    return {f"k{i}": i for i in range(2000)}


WORKLOADS = {"words": _words, "sort": _sort, "dict": _dict}


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 6.0
    probe: list[float] = []
    work: dict[str, list[float]] = {k: [] for k in WORKLOADS}
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        block_end = time.perf_counter() + 0.1
        got: dict[str, list[float]] = {k: [] for k in WORKLOADS}
        readings = []
        while time.perf_counter() < block_end:
            readings.append(speed_probe())
            for name, fn in WORKLOADS.items():
                t = time.perf_counter()
                fn()
                got[name].append(time.perf_counter() - t)
        probe.append(math.log(statistics.median(readings)))
        for name in WORKLOADS:
            work[name].append(math.log(statistics.median(got[name])))
    print(f"{len(probe)} blocks; probe spread +{math.expm1(max(probe) - min(probe)):.0%}")
    for name, logs in work.items():
        r = statistics.correlation(probe, logs)
        print(f"{name:6s} spread +{math.expm1(max(logs) - min(logs)):.0%}, correlation with the probe {r:+.2f}")


if __name__ == "__main__":
    main()
