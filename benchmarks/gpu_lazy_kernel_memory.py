"""Host memory a first use of a CUDA kernel adds (CUDA's lazy loading of kernel modules), in one process: the
resident set before and after the first `pad.mul_(1.0)` on a bf16 tensor (the held-out heads' extra kernel,
benchmarks/gpu_heldout.py), after a model's forward (`HELDOUT_MODELS`' language model, random weights) has run.
Prints one line per step. Usage (device machine): python3 benchmarks/gpu_lazy_kernel_memory.py [MODEL]
  MODEL: a gpu_heldout.py pair name (default bigcode-inception); its language model runs first."""

from __future__ import annotations

import os
import sys

import psutil
import torch


def rss_mib() -> float:
    return psutil.Process().memory_info().rss / 2**20


def main() -> None:
    sys.path.insert(0, os.path.dirname(__file__))
    os.environ["HELDOUT_MODELS"] = sys.argv[1] if len(sys.argv) > 1 else "bigcode-inception"
    import gpu_heldout

    namespace: dict[str, object] = {}
    exec(gpu_heldout.models(0), namespace)  # the benchmark's own generated workload file
    lm = namespace[gpu_heldout._chosen()[1]]

    class Ctx:
        device, seed, params = "cuda", 0, {}

    call = lm.setup(Ctx())  # type: ignore[attr-defined]
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    loading = os.environ.get("CUDA_MODULE_LOADING", "default")
    print(f"model warm:                 RSS {rss_mib():8.1f} MiB (CUDA_MODULE_LOADING={loading})")
    pad = torch.ones(64 * 1024, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    before = rss_mib()
    print(f"bf16 pad allocated:         RSS {before:8.1f} MiB")
    pad.mul_(1.0)
    torch.cuda.synchronize()
    first = rss_mib()
    print(f"after the first pad.mul_:   RSS {first:8.1f} MiB ({first - before:+.1f} MiB)")
    for _ in range(100):
        pad.mul_(1.0)
    torch.cuda.synchronize()
    print(f"after 100 more:             RSS {rss_mib():8.1f} MiB ({rss_mib() - first:+.1f} MiB)")


if __name__ == "__main__":
    main()
