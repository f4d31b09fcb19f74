"""Triton kernels for the `kernels` suite. Imports triton at import time: import this module only inside a
set-up, after checking that triton and a CUDA device exist (see builtin/kernels.py, `triton_add`).

The vector add follows Triton's tutorial 01 (https://triton-lang.org/main/getting-started/tutorials/
01-vector-add.html): one program per BLOCK_SIZE elements, masked loads and store for the tail.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl


@triton.jit  # type: ignore[untyped-decorator,misc]
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):  # type: ignore[no-untyped-def]
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x: Any, y: Any, out: Any, block_size: int = 1024) -> Any:
    """out = x + y for contiguous CUDA tensors of the same shape and dtype."""
    n = out.numel()
    grid = (triton.cdiv(n, block_size),)
    _add_kernel[grid](x, y, out, n, BLOCK_SIZE=block_size)
    return out
