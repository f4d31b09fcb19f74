"""Small models with random weights (no downloads) for the `models` and `onnx` suites, with their FLOP counts.

Imports torch at import time: import this module inside a workload's set-up, never at a suite's top level.

FLOPs are counted analytically (multiply-add = 2 FLOPs, over matmuls and convolutions; elementwise work,
normalisation and softmax are not counted), which is what `torch.utils.flop_counter` reports for these models
where it is right; it is wrong for the encoder block: it misses scaled-dot-product attention on CPU (and the
fused multi-head-attention fast path under no_grad), so the attention term is added here by formula
(tests/unit/test_workloads_zoo.py checks both against the counter).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self, d: int = 512, hidden: int = 2048) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))  # type: ignore[no-any-return]


class EncoderBlock(nn.Module):
    """Pre-norm transformer encoder block: LN, fused QKV projection, SDPA, output projection, LN, GELU MLP."""

    def __init__(self, d: int = 256, heads: int = 4, ff: int = 1024) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(attn)
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))  # type: ignore[no-any-return]


class SmallCNN(nn.Module):
    """Two conv-BN-ReLU stages on 3x32x32 images, global average pooling, a linear classifier."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(64, classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)  # type: ignore[no-any-return]


SEQ = 64  # encoder sequence length


def _mlp_flops(batch: int) -> float:
    return 2.0 * batch * (512 * 2048 + 2048 * 512)


def _encoder_flops(batch: int) -> float:
    d, ff, s = 256, 1024, SEQ
    linear = 2.0 * batch * s * (d * 3 * d + d * d + d * ff + ff * d)
    attention = 4.0 * batch * s * s * d  # Q K^T and P V, all heads
    return linear + attention


def _cnn_flops(batch: int) -> float:
    conv1 = 2.0 * batch * 32 * 32 * 32 * 3 * 9
    conv2 = 2.0 * batch * 64 * 16 * 16 * 32 * 9
    return conv1 + conv2 + 2.0 * batch * 64 * 10


@dataclass(frozen=True)
class ModelSpec:
    name: str
    build: Callable[[], nn.Module]
    input_shape: Callable[[int], tuple[int, ...]]
    flops: Callable[[int], float]


MODELS: Mapping[str, ModelSpec] = MappingProxyType(
    {
        "mlp": ModelSpec("mlp", MLP, lambda b: (b, 512), _mlp_flops),
        "encoder": ModelSpec("encoder", EncoderBlock, lambda b: (b, SEQ, 256), _encoder_flops),
        "cnn": ModelSpec("cnn", SmallCNN, lambda b: (b, 3, 32, 32), _cnn_flops),
    }
)


def build(name: str, seed: int, device: str) -> nn.Module:
    """The model with weights drawn from `seed` (batch-norm statistics randomised too), in eval mode."""
    torch.manual_seed(seed)
    model = MODELS[name].build()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d) and m.running_mean is not None and m.running_var is not None:
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    return model.eval().to(device)


def example_input(name: str, batch: int, seed: int, device: str) -> torch.Tensor:
    g = torch.Generator(device=device).manual_seed(seed + 1)
    return torch.randn(MODELS[name].input_shape(batch), generator=g, device=device)
