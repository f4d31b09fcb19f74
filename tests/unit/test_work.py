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


def test_counting_flops_leaves_a_compiled_function_compiled() -> None:
    """CPU twin of the H200 finding (docs/gpu.md): one call of a torch.compile'd function under FlopCounterMode
    switched it to eager for good. A counting backend shows whether later calls still run the compiled graph."""
    graph_calls = []

    def backend(gm, example_inputs):  # type: ignore[no-untyped-def]
        def run(*args):  # type: ignore[no-untyped-def]
            graph_calls.append(1)
            return gm.forward(*args)

        return run

    torch._dynamo.reset()
    compiled = torch.compile(lambda a: torch.relu(a @ a), backend=backend)
    a = torch.randn(16, 16)
    compiled(a)
    flops, _, sources = resolve_work(lambda: compiled(a), None, None, torch)
    assert flops == 2 * 16**3 and sources["flops"] == "derived"
    before = len(graph_calls)
    compiled(a)
    compiled(a)
    assert len(graph_calls) == before + 2  # still the compiled graph, not eager


def test_derived_bytes_are_what_the_call_touches_not_what_it_holds() -> None:
    """Issue 15: a call that sums 1,000 elements of a big tensor moves 4 KB (the slice is a view: not counted,
    the sum reads the view by its own size), not the tensor it holds."""
    big = torch.ones(1_000_000)
    _, nbytes, src = resolve_work(lambda: big[:1000].sum(), None, None, torch)
    assert nbytes == 4 * 1000 + 4 and src["bytes"] == "derived"


def test_derived_bytes_count_what_a_call_allocates_and_fills() -> None:
    """A call that allocates (no traffic), fills (writes) and sums (reads) its own tensor: at least 2x its size."""
    n = 250_000

    def call() -> object:
        t = torch.empty(n)
        t.fill_(1.0)
        return t.sum()

    _, nbytes, _ = resolve_work(call, None, None, torch)
    assert nbytes is not None and nbytes >= 2 * 4 * n


def test_view_only_calls_derive_nothing() -> None:
    x = torch.ones(64, 64)
    _, nbytes, src = resolve_work(lambda: x.t()[:8], None, None, torch)
    assert nbytes is None and src["bytes"] == "unknown"


def test_flops_agree_with_torchs_flop_counter() -> None:
    """The formulas are torch's own; summed by our dispatch mode they give FlopCounterMode's totals."""
    from torch.utils.flop_counter import FlopCounterMode

    from perfci.profilers.work import derive_flops

    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 128, generator=g), torch.randn(128, 32, generator=g)
    x, w = torch.randn(2, 3, 16, 16, generator=g), torch.randn(4, 3, 3, 3, generator=g)
    q = torch.randn(4, 32, 16, generator=g)
    lin = torch.nn.Linear(128, 32)
    calls = {
        "mm": lambda: a @ b,
        "conv2d": lambda: torch.nn.functional.conv2d(x, w),
        "linear+relu": lambda: torch.relu(lin(a)).sum(),
        "bmm": lambda: torch.bmm(q, q.transpose(-1, -2)),
    }
    for name, call in calls.items():
        with FlopCounterMode(display=False) as reference:
            call()
        assert derive_flops(call, torch) == float(reference.get_total_flops()), name


def test_deriving_work_does_not_load_dynamo() -> None:
    """Counting FLOPs and bytes in a fresh interpreter leaves torch._dynamo unloaded (it cost every worker 3.4 s
    of imports before, docs/measurement.md)."""
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "from perfci.profilers.work import resolve_work\n"
        "a = torch.randn(32, 32)\n"
        "flops, nbytes, src = resolve_work(lambda: a @ a, None, None, torch)\n"
        "assert flops == 2 * 32**3 and nbytes == 3 * 4 * 32 * 32, (flops, nbytes)\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert done.stdout.strip() == "False"


def test_an_exception_of_the_workloads_own_code_in_a_counting_call_is_its_error() -> None:
    """A callable that failed on its second call (the counting call) was recorded `ok`: its later calls passed."""
    import torch

    calls = {"n": 0}

    def fails_second() -> object:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("call 2 fails")
        return torch.ones(4) + 1

    with pytest.raises(RuntimeError, match="call 2 fails"):
        resolve_work(fails_second, None, None, torch)

    def torch_refuses() -> object:  # an operator that fails inside torch: not a count, the workload's calls decide
        return torch.mm(torch.ones(2, 3), torch.ones(2, 3))

    assert resolve_work(torch_refuses, None, None, torch)[:2] == (None, None)
