"""Notes that explain a surprising figure, recorded by a workload's set-up in its case's notes under `explain`
(a list of sentences) and shown next to the decision table (reports/decisions.py).

- reduced precision on a CPU with no native support for it: bf16 or fp16 arithmetic is emulated or run in fp32
  through conversions, so the variant is often slower than fp32, not faster;
- int8 calibrated on random data: static quantisation's scales come from the seeded random inputs the workload
  feeds, not from real data, so its accuracy here says little about accuracy on real inputs;
- an execution provider that fell back to the CPU: ONNX Runtime was asked for a GPU provider and did not use it;
- a compiled variant that recompiled after its warm-up call: its timed calls may include compilation.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

EXPLAIN_NOTE = "explain"
NOTE_MARK = " (note: "  # opens each explanation a failed check's message ends with (`explained_check`)
# CPU flags (Linux /proc/cpuinfo) of native reduced-precision arithmetic
NATIVE_FLAGS = {"bf16": ("avx512_bf16", "amx_bf16"), "fp16": ("avx512_fp16", "amx_fp16")}


def explain(notes: dict[str, Any], sentence: str) -> None:
    """Record `sentence` in a case's notes (once)."""
    said = notes.setdefault(EXPLAIN_NOTE, [])
    if sentence not in said:
        said.append(sentence)


def explained_check(ctx: Any) -> None:
    """Make a failure of the case's check (`ctx.check`) end with the case's explanations. A case whose check fails
    records no notes (the engine keeps a failed case's error only), so an explanation that matters most exactly
    then (int8 calibrated on random data, beside an int8 variant past its tolerance) was never shown. The decision
    table reads them back from the message (reports/decisions.py `explanations`)."""
    check, said = ctx.check, ctx.notes.get(EXPLAIN_NOTE)
    if check is None or not said:
        return

    def explained() -> None:
        try:
            check()
        except AssertionError as exc:
            raise AssertionError(str(exc) + "".join(f"{NOTE_MARK}{sentence})" for sentence in said)) from None

    ctx.check = explained


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The CPU's feature flags (empty where /proc/cpuinfo cannot be read: then nothing is claimed)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def reduced_precision_note(precision: str, flags: Iterable[str]) -> str | None:
    """Why a `precision` (bf16 or fp16) variant on this CPU may be slower than fp32; None where it is native or
    nothing is known about the CPU."""
    native = NATIVE_FLAGS.get(precision)
    have = frozenset(flags)
    if native is None or not have or have.intersection(native):
        return None
    return (
        f"this CPU has no native {precision} arithmetic (none of {', '.join(native)}): {precision} work runs "
        "through conversions to fp32, so this variant is often slower than fp32 here; a CPU or GPU with native "
        f"{precision} support may rank it differently"
    )


def random_calibration_note(batches: int) -> str:
    return (
        f"int8-static was calibrated on {batches} batches of seeded random inputs, not on real data: its "
        "quantisation scales, and so its accuracy here, may differ on real inputs (calibrate on your data for "
        "a decision)"
    )


def provider_fallback_note(requested: Iterable[Any], used: Iterable[str]) -> str | None:
    """ONNX Runtime was asked for a GPU provider and runs on the CPU provider only."""
    names = [p[0] if isinstance(p, tuple) else str(p) for p in requested]
    gpu = [n for n in names if n != "CPUExecutionProvider"]
    active = set(used)
    if not gpu or active.intersection(gpu):
        return None
    return (
        f"ONNX Runtime fell back to the CPU: {', '.join(gpu)} was requested but the session uses "
        f"{', '.join(sorted(active)) or 'no provider'}; this case measures the CPU"
    )


def compiled_graphs(torch: Any) -> int | None:
    """How many graphs torch.compile has compiled in this process so far (None where torch does not say)."""
    try:
        return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])
    except (AttributeError, KeyError, TypeError, ValueError):
        return None


def recompile_note(before: int | None, after: int | None) -> str | None:
    if before is None or after is None or after <= before:
        return None
    return (
        f"the compiled model recompiled after its warm-up call ({after - before} new graph(s)): a guard failed "
        "(shapes, dtypes or Python state changed between calls), so timed calls may include compilation"
    )
