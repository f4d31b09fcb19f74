"""The `kernels` suite: single kernels on CPU and CUDA, with declared bytes and FLOPs (docs/workloads.md).

Sizes depend on the device (per-device parameter values): CPU sizes keep a case at a few to tens of
milliseconds on one core; CUDA sizes are far beyond an H200's 50 MB L2, so bandwidth kernels measure HBM, not
cache. Inputs are drawn on the case's device from a generator seeded with the run's seed.

Bytes are the compulsory traffic (each input read once, each output written once); FLOPs are declared for
matmul, attention and convolution (multiply-add = 2) and left undeclared for memory-bound kernels.
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Callable
from typing import Any

import perfci
from perfci.workloads.api import WorkloadContext
from perfci.workloads.checks import Tolerance

DEVICES = ["cpu", "cuda"]
FP32_CHECK = Tolerance(rtol=1e-4, atol=1e-5)


def _rand(ctx: WorkloadContext, gen: Any, shape: tuple[int, ...], dtype: str) -> Any:
    import torch

    return torch.randn(shape, generator=gen, device=ctx.device, dtype=getattr(torch, dtype))


def _gen(ctx: WorkloadContext) -> Any:
    import torch

    return torch.Generator(device=ctx.device).manual_seed(ctx.seed)


BOTH = ["float32", "bfloat16"]
FP32_ON_CPU = {"cpu": ["float32"], "cuda": BOTH}
ROWS = {"cpu": [1024], "cuda": [65536]}  # x 4096 columns: 16 MiB / 1 GiB of fp32


def _matmul_skip(device: str, n: int, dtype: str) -> str | None:
    if device == "cpu" and dtype == "bfloat16" and n > 256:
        return "bf16 GEMM on CPUs without bf16 units is emulated: only the smallest size"
    return None


@perfci.workload(
    params={"n": {"cpu": [256, 512], "cuda": [4096, 8192]}, "dtype": BOTH},
    devices=DEVICES,
    skip=_matmul_skip,
    tags=["gemm", "compute-bound"],
)
def matmul(ctx: WorkloadContext, n: int, dtype: str) -> Callable[[], object]:
    import torch

    g = _gen(ctx)
    a, b = _rand(ctx, g, (n, n), dtype), _rand(ctx, g, (n, n), dtype)
    ctx.flops = 2.0 * n**3
    ctx.bytes = 3.0 * n * n * a.element_size()
    return lambda: torch.mm(a, b)


@perfci.workload(
    params={"rows": ROWS, "cols": [4096], "dtype": FP32_ON_CPU},
    devices=DEVICES,
    tags=["memory-bound"],
)
def softmax(ctx: WorkloadContext, rows: int, cols: int, dtype: str) -> Callable[[], object]:
    import torch

    x = _rand(ctx, _gen(ctx), (rows, cols), dtype)
    ctx.bytes = 2.0 * x.numel() * x.element_size()
    return lambda: torch.softmax(x, dim=-1)


@perfci.workload(
    params={"rows": ROWS, "cols": [4096], "dtype": FP32_ON_CPU},
    devices=DEVICES,
    tags=["memory-bound"],
)
def layernorm(ctx: WorkloadContext, rows: int, cols: int, dtype: str) -> Callable[[], object]:
    import torch

    g = _gen(ctx)
    x, w, b = _rand(ctx, g, (rows, cols), dtype), _rand(ctx, g, (cols,), dtype), _rand(ctx, g, (cols,), dtype)
    ctx.bytes = 2.0 * x.numel() * x.element_size() + 2.0 * cols * w.element_size()
    return lambda: torch.nn.functional.layer_norm(x, (cols,), w, b)


@perfci.workload(
    params={"batch": [4], "heads": [8], "seq": {"cpu": [256], "cuda": [4096]}, "head_dim": [64], "dtype": FP32_ON_CPU},
    devices=DEVICES,
    tags=["attention", "compute-bound"],
)
def sdpa(ctx: WorkloadContext, batch: int, heads: int, seq: int, head_dim: int, dtype: str) -> Callable[[], object]:
    """Non-causal scaled-dot-product attention; torch picks the backend (flash on CUDA for bf16)."""
    import torch

    g = _gen(ctx)
    q, k, v = (_rand(ctx, g, (batch, heads, seq, head_dim), dtype) for _ in range(3))
    ctx.flops = 4.0 * batch * heads * seq * seq * head_dim  # Q K^T and P V; softmax not counted
    ctx.bytes = 4.0 * q.numel() * q.element_size()  # read q, k, v, write o (flash-attention minimum)

    def call() -> object:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    return call


@perfci.workload(
    params={
        "batch": {"cpu": [4], "cuda": [64]},
        "channels": [64],
        "hw": {"cpu": [28], "cuda": [56]},
        "dtype": FP32_ON_CPU,
    },
    devices=DEVICES,
    tags=["conv", "compute-bound"],
)
def conv2d(ctx: WorkloadContext, batch: int, channels: int, hw: int, dtype: str) -> Callable[[], object]:
    """3x3 convolution, stride 1, padding 1, `channels` in and out (fp32 on CUDA uses TF32: cuDNN's default)."""
    import torch

    g = _gen(ctx)
    x = _rand(ctx, g, (batch, channels, hw, hw), dtype)
    w = _rand(ctx, g, (channels, channels, 3, 3), dtype)
    ctx.flops = 2.0 * batch * channels * hw * hw * channels * 9
    ctx.bytes = float((x.numel() * 2 + w.numel()) * x.element_size())  # input, weights, output of input's size
    return lambda: torch.nn.functional.conv2d(x, w, padding=1)


def _gelu_unfused(x: Any) -> Any:
    import torch

    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def _elementwise_skip(device: str, numel: int, impl: str) -> str | None:
    if impl == "compiled" and device == "cpu" and os.environ.get("PERFCI_CPU_COMPILE") != "1":
        return "torch.compile on CPU is opt-in (set PERFCI_CPU_COMPILE=1): its first compilation is slow"
    return None


@perfci.workload(
    params={"numel": {"cpu": [1 << 20], "cuda": [1 << 28]}, "impl": ["unfused", "fused", "compiled"]},
    devices=DEVICES,
    skip=_elementwise_skip,
    tags=["memory-bound", "fusion"],
)
def gelu_chain(ctx: WorkloadContext, numel: int, impl: str) -> Callable[[], object]:
    """tanh-GELU as a chain of 9 elementwise ops (`unfused`: 9 kernels, 8 intermediate tensors), as one
    kernel (`fused`: F.gelu(approximate="tanh")), or generated by torch.compile (`compiled`). Same bytes
    declared for all three (read x, write y): the GB/s shows what fusion saves. Outputs checked against each
    other."""
    import torch

    x = _rand(ctx, _gen(ctx), (numel,), "float32")
    fused = torch.nn.functional.gelu(x, approximate="tanh")
    fn: Callable[[], object]
    if impl == "unfused":
        fn = lambda: _gelu_unfused(x)  # noqa: E731
    elif impl == "fused":
        fn = lambda: torch.nn.functional.gelu(x, approximate="tanh")  # noqa: E731
    else:
        compiled = torch.compile(_gelu_unfused)
        compiled(x)
        fn = lambda: compiled(x)  # noqa: E731
    ctx.bytes = 2.0 * x.numel() * x.element_size()
    ctx.check_close(fn, fused, FP32_CHECK, what=f"{impl} GELU vs F.gelu")
    return fn


@perfci.workload(
    params={"rows": ROWS, "cols": [4096]},
    devices=DEVICES,
    tags=["memory-bound", "reduction"],
)
def row_sum(ctx: WorkloadContext, rows: int, cols: int) -> Callable[[], object]:
    import torch

    x = _rand(ctx, _gen(ctx), (rows, cols), "float32")
    ctx.bytes = float((x.numel() + rows) * x.element_size())
    return lambda: torch.sum(x, dim=-1)


@perfci.workload(
    params={"mib": {"cpu": [64], "cuda": [1024]}},
    devices=DEVICES,
    tags=["memory-bound", "bandwidth"],
)
def copy(ctx: WorkloadContext, mib: int) -> Callable[[], object]:
    """dst.copy_(src) of `mib` MiB of fp32: the plainest bandwidth probe (2 bytes moved per byte copied;
    a CPU's write-allocate read of dst is not counted, as in STREAM)."""
    import torch

    src = _rand(ctx, _gen(ctx), (mib * (1 << 20) // 4,), "float32")
    dst = torch.empty_like(src)
    ctx.bytes = 2.0 * src.numel() * src.element_size()
    return lambda: dst.copy_(src)


@perfci.workload(params={"mib": [1024]}, devices=["cuda"], tags=["memory-bound", "bandwidth", "triton"])
def triton_add(ctx: WorkloadContext, mib: int) -> Callable[[], object]:
    """out = x + y with a Triton kernel (backends/triton_ops.py), `mib` MiB per fp32 tensor; checked against
    torch's x + y. Skipped with the reason where triton is not installed."""
    if importlib.util.find_spec("triton") is None:
        ctx.skip("triton is not installed on this runner (pip install triton; it ships with CUDA builds of torch)")
    import torch

    from perfci.workloads.backends import triton_ops

    g = _gen(ctx)
    n = mib * (1 << 20) // 4
    x, y = _rand(ctx, g, (n,), "float32"), _rand(ctx, g, (n,), "float32")
    out = torch.empty_like(x)
    ctx.bytes = 3.0 * n * x.element_size()
    ctx.check_close(lambda: triton_ops.add(x, y, out), x + y, Tolerance(rtol=0.0, atol=0.0), what="triton add")
    return lambda: triton_ops.add(x, y, out)
