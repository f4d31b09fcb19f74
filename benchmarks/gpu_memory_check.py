"""GPU check for issue 15, run by hand on a CUDA machine: prints a short table.

1. For each case of the `kernels` suite: `memory.device` (the case's own tensors and workspace) beside the
   worker's `memory.peak_device` and NVML's per-process figure (context).
2. For bf16 GEMMs 4096^3 and 8192^3: perfci's median (one `perfci run`, hot mode) against
   `triton.testing.do_bench` (median), measured back to back on the same GPU.

Usage: python benchmarks/gpu_memory_check.py [--rounds 3] [--out /tmp/gpu_memory_check]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from perfci.metrics.registry import LATENCY, MEMORY_DEVICE, PEAK_DEVICE
from perfci.model import CaseResult
from perfci.schema import load_results

MIB = 2**20
GEMM_FILE = """
import perfci

@perfci.workload(params={"n": [4096, 8192]}, devices=["cuda"])
def gemm(ctx, n):
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
    subprocess.run([*cmd, "--out", str(out), "--exit-zero"], check=True)
    return list(load_results(out / "results.json").cases)


def memory_table(out: Path, rounds: int) -> None:
    print(f"{'case':60} {'memory.device':>14} {'peak_device':>12} {'nvml/process':>13}")
    for c in perfci_run(out / "kernels", rounds, "--suite", "kernels"):
        nvml = [r.telemetry.get("nvml_process_bytes") for r in c.rounds]
        nv = max((x for x in nvml if x), default=float("nan"))
        dev, peak = _value(c, MEMORY_DEVICE) / MIB, _value(c, PEAK_DEVICE) / MIB
        print(f"{c.id:60} {dev:11.1f} MiB {peak:9.1f} MiB {nv / MIB:10.1f} MiB")


def do_bench_median(n: int) -> float:
    import torch
    from triton.testing import do_bench

    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    return float(do_bench(lambda: a @ b, return_mode="median")) * 1e-3


def gemm_table(out: Path, rounds: int) -> None:
    source = out / "gemm_check.py"
    source.write_text(GEMM_FILE)
    cases = perfci_run(out / "gemm", rounds, str(source))
    print(f"\n{'GEMM bf16':14} {'perfci median':>14} {'do_bench median':>16} {'perfci/do_bench':>16}")
    for c in cases:
        n = int(c.spec.params["n"])
        ours, theirs = _value(c, LATENCY), do_bench_median(n)
        print(f"{n}^3{'':8} {ours * 1e6:11.1f} us {theirs * 1e6:13.1f} us {ours / theirs:15.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="gpu_memory_check-"))
    out.mkdir(parents=True, exist_ok=True)
    memory_table(out, args.rounds)
    gemm_table(out, args.rounds)


if __name__ == "__main__":
    main()
