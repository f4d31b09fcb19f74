"""Issue #17's kill-and-resume bar, for real: `perfci run` of 8 cases (5 rounds of about 0.3-0.4 s: about
2 s a case, 8 cases in about 17 s) is killed with SIGKILL
at 12 s, then `perfci run --resume` with the same --out completes it. Prints what was kept and re-measured, and
checks that every round finished before the kill is unchanged in the final file.

Usage: python benchmarks/resume_check.py [--kill-at 12] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKLOAD = """\
import perfci
import torch  # as a real suite's worker would: about 1.5 s of start-up per worker on a 2-core VM

TIMING = {"warmup_s": 0.1, "min_samples": 5, "budget_s": 0.3, "min_sample_s": 0.002}


@perfci.workload(params={"i": list(range(8))}, timing=TIMING)
def spin(ctx, i):
    data = list(range(2000 + 10 * i))
    return lambda: sum(x * x for x in data)
"""


def rounds(path: Path) -> dict[tuple[str, int], list[float]]:
    doc = json.loads(path.read_text())
    return {(c["id"], r["index"]): r["samples"] for c in doc["cases"] for r in c.get("rounds", [])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kill-at", type=float, default=12.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    work = args.out or Path(tempfile.mkdtemp(prefix="perfci-resume-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "bench_kill.py").write_text(WORKLOAD)
    out = work / "out"
    cmd = [sys.executable, "-m", "perfci", "run", str(work / "bench_kill.py"), "--rounds", "5", "--out", str(out)]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
    try:
        proc.wait(timeout=args.kill_at)
        print(f"the run finished before {args.kill_at} s: nothing to resume")
        return 1
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    before = rounds(out / "results.json")
    print(f"killed at {time.monotonic() - start:.1f} s: {len(before)} of 40 rounds written")
    t0 = time.monotonic()
    done = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, cwd=work, check=False)
    after = rounds(out / "results.json")
    doc = json.loads((out / "results.json").read_text())
    kept = [k for k in before if after.get(k) == before[k]]
    print(
        f"resume: exit {done.returncode} in {time.monotonic() - t0:.1f} s; cases {len(doc['cases'])}, rounds "
        f"{len(after)}; kept unchanged {len(kept)} of {len(before)}; measured {len(after) - len(kept)}; "
        f"complete {doc['settings'].get('complete')}; note {doc['settings'].get('resumed')}"
    )
    ok = done.returncode in (0, 1) and len(after) == 40 and len(kept) == len(before) and len(doc["cases"]) == 8
    print("bar:", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
