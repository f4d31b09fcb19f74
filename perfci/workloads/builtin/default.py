"""The default suite: a few small CPU workloads that `perfci run` measures when nothing is configured.

Sizes are chosen so each case takes roughly 1-5 ms on one core of a CI machine: long enough for stable
medians, short enough that the whole suite runs in well under a minute on 2 cores.
"""

from __future__ import annotations

from collections.abc import Callable

import perfci
from perfci.workloads.api import WorkloadContext


def _generator(ctx: WorkloadContext):  # type: ignore[no-untyped-def]
    import torch

    return torch.Generator(device="cpu").manual_seed(ctx.seed)


@perfci.workload(params={"n": [384], "dtype": ["float32"]}, devices=["cpu"], tags=["gemm"])
def matmul(ctx: WorkloadContext, n: int, dtype: str) -> Callable[[], object]:
    import torch

    g = _generator(ctx)
    dt = getattr(torch, dtype)
    a = torch.randn(n, n, generator=g, dtype=dt).to(ctx.device)
    b = torch.randn(n, n, generator=g, dtype=dt).to(ctx.device)
    ctx.flops = 2.0 * n**3
    ctx.bytes = 3.0 * n * n * a.element_size()
    return lambda: torch.mm(a, b)


@perfci.workload(params={"rows": [256], "cols": [4096]}, devices=["cpu"], tags=["memory-bound"])
def softmax(ctx: WorkloadContext, rows: int, cols: int) -> Callable[[], object]:
    import torch

    x = torch.randn(rows, cols, generator=_generator(ctx)).to(ctx.device)
    ctx.bytes = 2.0 * x.numel() * x.element_size()  # read input, write output
    ctx.flops = 4.0 * x.numel()  # exp, sum, max, divide per element (approximate)
    return lambda: torch.softmax(x, dim=-1)


# batch sweeps (8 and 32): the report shows items per second against batch size and marks the best (a sweep)
@perfci.workload(params={"batch": [8, 32], "hidden": [512]}, devices=["cpu"], tags=["model"])
def mlp(ctx: WorkloadContext, batch: int, hidden: int) -> Callable[[], object]:
    import torch

    torch.manual_seed(ctx.seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(hidden, 4 * hidden), torch.nn.GELU(), torch.nn.Linear(4 * hidden, hidden)
    ).eval()
    x = torch.randn(batch, hidden, generator=_generator(ctx))
    ctx.flops = 2.0 * batch * (hidden * 4 * hidden) * 2
    ctx.bytes = 4.0 * (2 * hidden * 4 * hidden + 2 * batch * hidden + batch * 4 * hidden)

    def forward() -> object:
        with torch.inference_mode():
            return model(x)

    return forward


@perfci.workload(params={"rows": [512], "cols": [1024]}, devices=["cpu"], tags=["memory-bound"])
def layernorm(ctx: WorkloadContext, rows: int, cols: int) -> Callable[[], object]:
    import torch

    x = torch.randn(rows, cols, generator=_generator(ctx))
    w = torch.randn(cols, generator=_generator(ctx))
    b = torch.randn(cols, generator=_generator(ctx))
    ctx.bytes = 2.0 * x.numel() * 4 + 2 * cols * 4
    ctx.flops = 8.0 * x.numel()
    return lambda: torch.nn.functional.layer_norm(x, (cols,), w, b)
