"""What the first case of a model variant pays in a worker for what loads on first use, with and without the
model workloads' warm-up (`perfci/workloads/torch_model.py` `warm_variant`); docs/measurement.md, "Memory".

Each configuration runs in a fresh process: the worker's runtime warm-up (`case_memory.warm_runtime`), then, with
`--warm`, the variant's warm-up, then two cases of the variant (a 256-512-64 MLP at batch 1, then 16), each kept
alive as a worker keeps its cases, each measured as a worker measures a case's resident growth over its set-up
(garbage collected and the C heap trimmed before each reading).

    python benchmarks/first_use_memory.py [VARIANT ...]    # default: eager bf16 compile

Prints, per variant: the first and the second case's MiB, unwarmed and warmed, and the warm-up's seconds.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import time

MIB = 2**20


def _one(variant: str, warm: bool) -> str:
    import torch

    from perfci.profilers import memory
    from perfci.profilers.case_memory import malloc_trim, warm_runtime
    from perfci.workloads.api import WorkloadContext
    from perfci.workloads.torch_model import MODEL_TOLERANCES, TorchModel, warm_variant

    torch.set_num_threads(1)
    warm_runtime(torch, "cpu")
    t0 = time.perf_counter()
    if warm:
        warm_variant("cpu", {"variant": variant})
    warm_s = time.perf_counter() - t0

    def rss() -> int:
        gc.collect()
        malloc_trim()
        return memory.current_rss()

    def mlp() -> torch.nn.Module:
        return torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 64))

    model = TorchModel(mlp, lambda b: torch.randn(b, 256), MODEL_TOLERANCES)
    kept, own = [], []
    for batch in (1, 16):
        before = rss()
        ctx = WorkloadContext(device="cpu", params={}, seed=0)
        kept.append(model.setup(ctx, variant, batch))
        own.append((rss() - before) / MIB)
    return f"{own[0]:.2f} {own[1]:.2f} {warm_s:.2f}"


def main(variants: list[str]) -> None:
    print(f"{'variant':<10} {'warmed':<7} {'first MiB':>10} {'second MiB':>11} {'warm-up s':>10}")
    for variant in variants:
        for warm in (False, True):
            out = subprocess.run(
                [sys.executable, __file__, "--one", variant, str(int(warm))],
                capture_output=True, text=True, check=True,
            ).stdout.split()  # fmt: skip
            first, second, warm_s = out[-3:]
            print(f"{variant:<10} {'yes' if warm else 'no':<7} {first:>10} {second:>11} {warm_s:>10}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(_one(sys.argv[2], sys.argv[3] == "1"))
    else:
        main(sys.argv[1:] or ["eager", "bf16", "compile"])
