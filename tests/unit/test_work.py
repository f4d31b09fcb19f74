"""Bytes and FLOPs per call: declared wins; otherwise derived from tensors and torch's FLOP counter."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from perfci.profilers.work import resolve_work  # noqa: E402


def test_declared_values_win() -> None:
    a = torch.ones(4, 4)
    flops, nbytes, src = resolve_work(lambda: a @ a, 10.0, 20.0, torch)
    assert (flops, nbytes, src) == (10.0, 20.0, {"flops": "declared", "bytes": "declared"})


def test_matmul_work_is_derived() -> None:
    a = torch.randn(64, 32)
    b = torch.randn(32, 16)
    flops, nbytes, src = resolve_work(lambda: a @ b, None, None, torch)
    assert flops == 2 * 64 * 32 * 16
    assert nbytes == 4 * (64 * 32 + 32 * 16 + 64 * 16)  # inputs + output
    assert src == {"flops": "derived", "bytes": "derived"}


def test_elementwise_has_bytes_but_unknown_flops() -> None:
    x = torch.randn(1000)
    flops, nbytes, src = resolve_work(lambda: torch.relu(x), None, None, torch)
    assert flops is None and src["flops"] == "unknown"
    assert nbytes == 2 * 4000


def test_without_torch_nothing_is_derived() -> None:
    assert resolve_work(lambda: sum([1, 2]), None, None, None) == (None, None, {"flops": "unknown", "bytes": "unknown"})
