"""GPU memory check, run by hand on a CUDA machine: prints a short table.

1. For each case of the `kernels` suite: `memory.device` (the case's own tensors and workspace) beside the
   worker's `memory.peak_device` and NVML's per-process figure (context).
2. For bf16 GEMMs 4096^3 and 8192^3, one table: perfci's median in hot and cold (bursts), sustained and
   sustained-cold mode (a `perfci run` each), then, right after them on the same GPU, `triton.testing.do_bench`
   (median) and plain CUDA-event loops (`references`), with the SM clock, power and settle time the sustained
   modes reached.

Bar: the sustained-cold median (the L2 flushed before every call, as do_bench does) within 3% of
do_bench's median at do_bench's own steady state (SETTLE_S of warm-up), for both sizes; the back-to-back sustained
median is set against a plain back-to-back loop after SETTLE_S. Exit code 0 when met, 1 when not (or when a case
failed, or triton is missing).

Usage: python benchmarks/gpu_memory_check.py [--rounds 3] [--out /tmp/gpu_memory_check] [--skip-memory | --skip-gemm]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perfci.format.model import CaseResult
from perfci.format.schema import load_results
from perfci.metrics.registry import LATENCY, MEMORY_DEVICE, PEAK_DEVICE

MIB = 2**20
GEMM_FILE = """
import perfci

MODES = ["hot", "cold", "sustained", "sustained-cold"]

@perfci.workload(params={"n": [4096, 8192], "gpu_mode": MODES}, devices=["cuda"])
def gemm(ctx, n, gpu_mode):
    import torch
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    ctx.flops = 2 * n**3
    return lambda: a @ b
"""


def _value(case: CaseResult, name: str) -> float:
    m = case.metric(name)
    return m.value if m is not None else float("nan")


def perfci_run(out: Path, rounds: int, *sources: str) -> list[CaseResult]:
    cmd = [sys.executable, "-m", "perfci", "run", *sources, "--device", "cuda", "--rounds", str(rounds)]
    log = out.with_suffix(".log")  # perfci's own output goes here, so this script prints only its tables
    with log.open("w") as f:
        done = subprocess.run([*cmd, "--out", str(out), "--exit-zero"], stdout=f, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        print(log.read_text()[-3000:])
        raise RuntimeError(f"perfci run failed (exit {done.returncode}); log: {log}")
    return list(load_results(out / "results.json").cases)


def memory_table(out: Path, rounds: int) -> None:
    print(f"{'case':60} {'memory.device':>14} {'peak_device':>12} {'nvml/process':>13}")
    for c in perfci_run(out / "kernels", rounds, "--suite", "kernels"):
        nvml = [r.telemetry.get("nvml_process_bytes") for r in c.rounds]
        nv = max((x for x in nvml if x), default=float("nan"))
        dev, peak = _value(c, MEMORY_DEVICE) / MIB, _value(c, PEAK_DEVICE) / MIB
        print(f"{c.id:60} {dev:11.1f} MiB {peak:9.1f} MiB {nv / MIB:10.1f} MiB")


def references(n: int) -> dict[str, float]:
    """Reference medians (seconds per call) of the bf16 GEMM n^3, measured in this order right after perfci's run:
    `do_bench` at its defaults (25 ms warm-up, 100 ms of calls, the L2 cache flushed before each call); a plain
    loop of 200 back-to-back calls, each between two CUDA events (no flush); then, after SETTLE_S of back-to-back
    calls, the plain loop again and `do_bench` with SETTLE_S of warm-up and 1 s of calls."""
    import torch
    from triton.testing import do_bench

    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)

    def fn() -> object:
        return a @ b

    def loop(calls: int = 200) -> float:
        marks = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(calls)]  # type: ignore[no-untyped-call]
        for start, end in marks:
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return float(statistics.median(start.elapsed_time(end) for start, end in marks)) * 1e-3

    out = {"do_bench": float(do_bench(fn, return_mode="median")) * 1e-3, "loop": loop()}
    deadline = time.perf_counter() + SETTLE_S
    while time.perf_counter() < deadline:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
    out["loop_settled"] = loop()
    settled_ms = int(SETTLE_S * 1000)
    out["do_bench_settled"] = float(do_bench(fn, warmup=settled_ms, rep=1000, return_mode="median")) * 1e-3
    return out


# do_bench at its defaults times 100 ms after 25 ms of warm-up: how far the clock has fallen towards the power
# cap by then depends on what ran just before. References after SETTLE_S of back-to-back calls are measured too
# (all printed, docs/gpu.md).
SETTLE_S = 10.0
BAR = 0.03
SIZES = (4096, 8192)


def _sustained(case: CaseResult | None) -> dict[str, float]:
    """The steady state the sustained mode reached (the last round's)."""
    rounds = [r.telemetry.get("sustained") for r in case.rounds] if case is not None else []
    reached = [r for r in rounds if isinstance(r, dict)]
    return reached[-1] if reached else {}


MODES = ("hot", "cold", "sustained", "sustained-cold")  # the references follow the last one at once


def gemm_table(out: Path, rounds: int) -> bool:
    """The GEMM table; True when every sustained-cold ratio is within BAR of do_bench at its steady state. Per
    size, back to back: a perfci run per mode (MODES), then the references (`references`)."""
    source = out / "gemm_check.py"
    source.write_text(GEMM_FILE)
    cases: dict[tuple[int, str], CaseResult] = {}
    refs: dict[int, dict[str, float]] = {}
    for n in SIZES:
        for mode in MODES:
            found = perfci_run(out / f"gemm-{n}-{mode}", rounds, str(source), "-k", f"n={n},gpu_mode={mode}]")
            if len(found) != 1:
                raise RuntimeError(f"expected one GEMM case for n={n}, {mode}; found {[c.id for c in found]}")
            cases[(n, mode)] = found[0]
        try:
            refs[n] = references(n)
        except ImportError as exc:
            print(f"\nFAIL: triton.testing.do_bench is not available ({exc}); the bar cannot be checked.")
            return False
    head = ("GEMM bf16", "hot", "cold", "sustained", "sust-cold", "do_bench", "db 10s", "loop", "loop 10s",
            "sust/loop10", "sc/db10", "sc/db", "SM MHz", "power W", "settle s", "host-bound", "bar")  # fmt: skip
    print("\n" + " | ".join(f"{h:>10}" for h in head))
    ok = True
    for n in SIZES:
        hot, cold, sus, sc = (_value(cases[(n, m)], LATENCY) if (n, m) in cases else float("nan") for m in MODES)
        reached, r = _sustained(cases.get((n, "sustained-cold"))), refs[n]
        passed = abs(sc / r["do_bench_settled"] - 1.0) <= BAR  # False for nan (a failed case)
        ok &= passed
        us = [f"{x * 1e6:.1f} us" for x in (hot, cold, sus, sc, r["do_bench"], r["do_bench_settled"], r["loop"],
                                             r["loop_settled"])]  # fmt: skip
        row = (
            f"{n}^3", *us, f"{sus / r['loop_settled']:.3f}", f"{sc / r['do_bench_settled']:.3f}",
            f"{sc / r['do_bench']:.3f}", f"{reached.get('sm_clock_mhz', float('nan')):.0f}",
            f"{reached.get('power_w', float('nan')):.0f}", f"{reached.get('settle_s', float('nan')):.1f}",
            f"{reached.get('host_bound_blocks', 'n/a')}", "PASS" if passed else "FAIL",
        )  # fmt: skip
        print(" | ".join(f"{c:>10}" for c in row))
    for n in SIZES:
        print(f"sustained {n}^3 reached: {_sustained(cases.get((n, 'sustained')))}")
        print(f"sustained-cold {n}^3 reached: {_sustained(cases.get((n, 'sustained-cold')))}")
    print(
        f"\nbar: sustained-cold / do_bench (10 s warm-up) within {BAR:.0%} for both sizes: {'met' if ok else 'NOT met'}"
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--skip-memory", action="store_true", help="only the GEMM table")
    parser.add_argument("--skip-gemm", action="store_true", help="only the memory table")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="gpu_memory_check-"))
    out.mkdir(parents=True, exist_ok=True)
    try:
        if not args.skip_memory:
            memory_table(out, args.rounds)
        return 0 if args.skip_gemm or gemm_table(out, args.rounds) else 1
    except (RuntimeError, OSError, KeyError, ValueError) as exc:
        print(f"FAIL: {type(exc).__name__}: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
