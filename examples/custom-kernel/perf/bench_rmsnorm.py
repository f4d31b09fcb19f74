"""perfci workloads for the project's RMSNorm kernel (mykernels/rmsnorm.py).

Case ids: bench_rmsnorm.rmsnorm_fp32[rows=...,hidden=...]@cpu (and @cuda where there is a GPU).
torch and the kernel are imported inside the set-up: listing cases then never pays for importing torch.
"""

import perfci
from perfci.workloads.checks import Tolerance


@perfci.workload(
    params={"rows": {"cpu": [2048], "cuda": [65536]}, "hidden": [1024, 2048]},
    devices=["cpu", "cuda"],
    tags=["norm", "memory-bound"],
)
def rmsnorm_fp32(ctx, rows, hidden):
    import torch
    from mykernels.rmsnorm import rmsnorm, rmsnorm_reference

    gen = torch.Generator(device=ctx.device).manual_seed(ctx.seed)  # seeded inputs, made on the device
    x = torch.randn(rows, hidden, generator=gen, device=ctx.device)
    w = torch.randn(hidden, generator=gen, device=ctx.device)
    # declared work: read x and w, write y (compulsory traffic); ~4 FLOPs per element
    ctx.bytes = (2 * x.numel() + w.numel()) * x.element_size()
    ctx.flops = 4 * x.numel()
    # checked once before timing: the kernel against the float64 definition
    ctx.check_close(lambda: rmsnorm(x, w), rmsnorm_reference(x, w), Tolerance(rtol=1e-5, atol=1e-5))
    return lambda: rmsnorm(x, w)
