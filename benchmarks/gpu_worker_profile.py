"""Where one worker's time goes: a single fresh worker process measuring the given workload file's cases, run
under cProfile, with wall time from spawn to exit. Prints the wall time and the cumulative time of the phases
(interpreter + imports, torch import, CUDA initialisation, each case's preparation, sampling, finishing).

Usage: python benchmarks/gpu_worker_profile.py WORKLOAD_FILE [DEVICE]   (DEVICE: cuda (default) or cpu)
"""

from __future__ import annotations

import pstats
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from perfci.engine.protocol import Job, JobCase, decode
from perfci.profilers.timing import TimingSettings
from perfci.workloads.discovery import cases_from_sources

PHASES = {
    "import torch": ("torch/__init__.py", "<module>"),
    "CUDA init (lazy_init)": ("torch/cuda/__init__.py", "_lazy_init"),
    "prepare (set-up, warm-up, calibration, memory)": ("perfci/engine/case_session.py", "prepare"),
    "finish (energy block, telemetry)": ("perfci/engine/case_session.py", "finish"),
    "sampling (run_slice)": ("perfci/profilers/timing.py", "run_slice"),
}


def main(source: str, device: str = "cuda") -> None:
    specs = [s for s in cases_from_sources([str(Path(source).resolve())]) if s.device.startswith(device)]
    cases = tuple(JobCase(s.id, s.source, s.workload, dict(s.params), s.device) for s in specs)
    job = Job(cases=cases, round_index=0, timing=asdict(TimingSettings()))
    with tempfile.TemporaryDirectory() as tmp:
        prof = Path(tmp) / "worker.prof"
        cmd = [sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "perfci.engine.worker"]
        start = time.perf_counter()
        proc = subprocess.run(cmd, input=job.encode() + "\n", capture_output=True, text=True, timeout=300, check=False)
        wall = time.perf_counter() - start
        events = [type(decode(line)).__name__ for line in proc.stdout.splitlines() if line.strip()]
        print(f"cases {len(cases)}; worker exit {proc.returncode}; wall {wall:.2f} s; events {' '.join(events)}")
        stats = pstats.Stats(str(prof))
        rows = stats.stats  # type: ignore[attr-defined]
        for label, (file_end, func) in PHASES.items():
            cum = sum(v[3] for (f, _, fn), v in rows.items() if f.endswith(file_end) and fn == func)
            calls = sum(v[1] for (f, _, fn), v in rows.items() if f.endswith(file_end) and fn == func)
            print(f"  {label:<50} {cum:7.2f} s  ({calls} call(s))")
        total = stats.total_tt  # type: ignore[attr-defined]
        print(
            f"  {'profiled total (inside the interpreter)':<50} {total:7.2f} s; wall - profiled = {wall - total:.2f} s"
        )
        print("  every function over 0.5 s, by cumulative time (what calls what is nested):")
        heavy = [(v[3], v[1], f, fn) for (f, _, fn), v in rows.items() if v[3] >= 0.5]
        for cum, calls, f, fn in sorted(heavy, reverse=True)[:45]:
            print(f"  {cum:7.2f} s {calls:6d}  {'/'.join(f.split('/')[-2:])}:{fn}")
        print("  perfci's own functions and the imports under them, by cumulative time:")
        own = [(v[3], v[1], f, fn) for (f, _, fn), v in rows.items() if "/perfci/" in f or "_dynamo/__init__" in f]
        for cum, calls, f, fn in sorted(own, reverse=True)[:25]:
            print(f"  {cum:7.2f} s {calls:6d}  {f.split('/perfci/')[-1]}:{fn}")


if __name__ == "__main__":
    main(*sys.argv[1:])
