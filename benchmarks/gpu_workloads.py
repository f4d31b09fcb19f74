"""GPU workloads for the measurement-engine checks on an NVIDIA GPU (benchmarks/gpu_check.sh runs them).

- copy: device-to-device copy of 1 GiB; bandwidth should approach the runner's calibrated copy peak.
- tiny: a launch-bound kernel on 1 element, hot (eager launches) vs graph (CUDA-graph replay).
- reduce: a sum over a working set smaller than L2 (8 MiB) and far larger (2 GiB): cold (L2 flushed, launch
  guarded) against graph replay (warm L2, no launch gaps); eager hot for reference.
"""

import perfci


def _randn(ctx, n):
    import torch

    g = torch.Generator(device="cuda").manual_seed(ctx.seed)
    return torch.randn(n, device=ctx.device, generator=g)


@perfci.workload(devices=["cuda"])
def copy(ctx):
    src = _randn(ctx, 2**28)  # 1 GiB of float32
    dst = src.clone()
    ctx.bytes = 2.0 * src.numel() * src.element_size()
    return lambda: dst.copy_(src)


@perfci.workload(params={"gpu_mode": ["hot", "graph"]}, devices=["cuda"])
def tiny(ctx, gpu_mode):
    x = _randn(ctx, 1)
    ctx.bytes = 2.0 * x.element_size()
    return lambda: x.add_(1.0)


@perfci.workload(params={"mib": [8, 2048], "gpu_mode": ["hot", "cold", "graph"]}, devices=["cuda"])
def reduce(ctx, mib, gpu_mode):
    x = _randn(ctx, mib * 2**20 // 4)
    ctx.bytes = float(x.numel() * x.element_size())
    return lambda: x.sum()
