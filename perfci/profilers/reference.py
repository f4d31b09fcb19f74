"""Runner speed reference: a fixed small torch kernel timed before each sample of a CPU case, in the same worker.

On a shared VM the vCPU's speed moves by 10-40% over seconds to minutes, and within a second or two it moves
every torch op alike (docs/measurement.md, "Speed reference"). A case's per-call time divided by the
reference's per-call time over the same seconds cancels most of that drift: `latency.vs_reference` (metrics.py)
is steadier across separate invocations than the latency in seconds, at the price of meaning "how many
reference kernels long" rather than milliseconds. The raw latency is still the headline; the reference is
recorded beside it (raw per-call samples in the round's telemetry).

The reference is a float32 matmul of `REFERENCE_N` x `REFERENCE_N` with seeded inputs, run under the case's
thread setting; its block is calibrated to at least `REFERENCE_SAMPLE_S`. It exists only where the workload
already imported torch (importing it for the reference would change the case's memory figures) and only for CPU
cases (a GPU's speed does not follow the host's). Limits: a change that slows torch's matmul itself (a torch
upgrade) moves the reference too, so it is not a substitute for the latency for such changes; and how much of the
drift it cancels depends on the case (most for the default suite's compute kernels, nothing measurable for a
dispatch-bound loop of tiny matmuls: docs/quality/stored_reference.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from perfci.profilers.timing import BlockTimer, TimingSettings, calibrate

REFERENCE_N = 256
REFERENCE_SAMPLE_S = 0.0003
REFERENCE_NAME = f"torch matmul {REFERENCE_N}x{REFERENCE_N} float32"


@dataclass
class SpeedReference:
    """Times `iterations` calls of `fn` per sample; keeps the per-call times."""

    fn: Callable[[], object]
    timer: BlockTimer
    iterations: int
    per_call: list[float] = field(default_factory=list)

    def sample(self) -> None:
        self.per_call.append(self.timer(self.fn, self.iterations) / self.iterations)


def torch_matmul(torch: Any, n: int = REFERENCE_N, seed: int = 0) -> Callable[[], object]:
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(n, n, generator=gen)
    b = torch.randn(n, n, generator=gen)
    out = torch.empty(n, n)
    return lambda: torch.matmul(a, b, out=out)


def open_reference(
    fn: Callable[[], object], timer: BlockTimer, overhead: float, settings: TimingSettings
) -> SpeedReference:
    """Warm the reference up (a few calls) and calibrate its block to REFERENCE_SAMPLE_S."""
    for _ in range(3):
        fn()
    ref_settings = dataclasses.replace(settings, min_sample_s=REFERENCE_SAMPLE_S)
    return SpeedReference(fn, timer, calibrate(fn, timer, overhead, ref_settings))
