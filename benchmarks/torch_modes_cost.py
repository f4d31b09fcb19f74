"""What `perfci ab --pytest` pays and gains by entering a test's torch mode again around every timed call
(perfci/workloads/torch_modes.py): the cost of entering a reused `torch.no_grad()` and `torch.inference_mode()`
per call, and a two-layer MLP's forward timed with autograd on against `no_grad` (what a test's `with
torch.no_grad(): benchmark(model, x)` was timed at before). Best of 5 repeats of N calls, one intra-op thread.

    python benchmarks/torch_modes_cost.py
"""

from __future__ import annotations

import timeit
from collections.abc import Callable

import torch


def best_per_call(fn: Callable[[], object], number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def main() -> None:
    torch.set_num_threads(1)
    no_grad, inference = torch.no_grad(), torch.inference_mode()

    def empty() -> None:
        return None

    def in_no_grad() -> None:
        with no_grad:
            empty()

    def in_inference() -> None:
        with inference:
            empty()

    base = best_per_call(empty, 200_000)
    for name, fn in (("torch.no_grad()", in_no_grad), ("torch.inference_mode()", in_inference)):
        print(f"entering a reused {name} per call: {(best_per_call(fn, 200_000) - base) * 1e6:.2f} µs")
    print("| MLP width | batch | autograd on | no_grad | ratio |\n| --: | --: | --: | --: | --: |")
    for width, batch, calls in ((64, 1, 2000), (256, 8, 2000), (1024, 32, 200)):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width))
        x = torch.randn(batch, width)
        grad = best_per_call(lambda: model(x), calls)  # noqa: B023
        with torch.no_grad():
            plain = best_per_call(lambda: model(x), calls)  # noqa: B023
        print(f"| {width} | {batch} | {grad * 1e6:.1f} µs | {plain * 1e6:.1f} µs | {grad / plain:.2f}x |")


if __name__ == "__main__":
    main()
