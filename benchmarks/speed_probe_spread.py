"""How far the speed probe's readings spread on a machine (perfci/profilers/contention.py, `speed_probe`): PROCS fresh
processes, each taking a reading every 50 ms for SECONDS, busy in between, as rounds of separate jobs would. Prints
per process the fastest and slowest reading, then the spread over all of them as compare/contended.py reads it (log
of the slowest over the fastest, shown as a percentage) against UNSTEADY_RANGE: above it, unpaired comparisons of
these jobs would be called unsteady.

Usage: python benchmarks/speed_probe_spread.py [PROCS] [SECONDS]   (perfci importable; defaults 12 and 1.0)
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

CHILD = """
import json, sys, time
from perfci.profilers.contention import speed_probe
end = time.perf_counter() + float(sys.argv[1])
got = []
while time.perf_counter() < end:
    got.append(speed_probe())
    pause = time.perf_counter() + 0.05
    while time.perf_counter() < pause:  # busy between readings, as a round's sampling is (a sleep lets the clock drop)
        pass
print(json.dumps(got))
"""


def main() -> None:
    from perfci.compare.contended import UNSTEADY_RANGE

    procs = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    every: list[float] = []
    for i in range(procs):
        out = subprocess.run([sys.executable, "-c", CHILD, str(seconds)], capture_output=True, text=True, check=True)
        got = json.loads(out.stdout)
        every += got
        spread = math.log(max(got) / min(got))
        print(f"process {i + 1:2d}: {len(got)} readings, {min(got) * 1e3:.3f}-{max(got) * 1e3:.3f} ms "
              f"(+{math.expm1(spread):.1%})")  # fmt: skip
    spread = math.log(max(every) / min(every))
    word = "unsteady" if spread > UNSTEADY_RANGE else "steady"
    print(f"all {len(every)} readings: {min(every) * 1e3:.3f}-{max(every) * 1e3:.3f} ms, "
          f"slowest +{math.expm1(spread):.1%} over the fastest; "
          f"the threshold is +{math.expm1(UNSTEADY_RANGE):.0%}: {word}")  # fmt: skip


if __name__ == "__main__":
    main()
