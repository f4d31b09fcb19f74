"""RMSNorm, the "custom kernel" of this example project: y = x / sqrt(mean(x^2) + eps) * weight.

`rmsnorm` is the version the project ships: one pass to get the mean square per row (`torch.linalg.vector_norm`
is a single fused reduction), one fused multiply. `rmsnorm_slow` is what a careless refactoring might
introduce (float64 round trip, three separate passes); set MYKERNELS_SLOW=1 to ship it and watch the gate
catch it.
"""

from __future__ import annotations

import os

import torch


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    if os.environ.get("MYKERNELS_SLOW") == "1":
        return rmsnorm_slow(x, weight, eps)
    scale = torch.linalg.vector_norm(x, dim=-1, keepdim=True) * x.shape[-1] ** -0.5
    return x * torch.rsqrt(scale * scale + eps) * weight


def rmsnorm_slow(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    xd = x.double()
    mean_square = (xd * xd).mean(dim=-1, keepdim=True)
    return (xd / torch.sqrt(mean_square + eps) * weight.double()).to(x.dtype)


def rmsnorm_reference(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """The definition, in float64: what the check compares with."""
    xd = x.double()
    return xd * torch.rsqrt(xd.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.double()
