"""Burst against sustained GPU timing: a note where both were measured for one case and their medians differ.

A case measured in hot (or graph) mode and in sustained mode, or in cold and in sustained-cold mode (`gpu_mode` in
its parameter grid, docs/measurement.md), gives a burst and a sustained median; where they differ by more than
NOTE_ABOVE the reports say so, with the SM clock and power the sustained run reached, so that nobody reads a burst
figure as what a training loop sees."""

from __future__ import annotations

from collections.abc import Iterator

from perfci.format.model import CaseResult, RunResult
from perfci.metrics.registry import LATENCY

NOTE_ABOVE = 0.03
# each sustained mode against the burst modes of the same cache policy
BURSTS = {"sustained": ("hot", "graph"), "sustained-cold": ("cold",)}


def _mode(case: CaseResult) -> str | None:
    if "gpu_mode" in case.spec.params:
        return str(case.spec.params["gpu_mode"])
    timers = {str(r.telemetry.get("timer", "")) for r in case.rounds}
    modes = {t.split("/", 1)[1] for t in timers if t.startswith("cuda_event/")}
    return modes.pop() if len(modes) == 1 else None


def _key(case: CaseResult) -> tuple[str, str, str]:
    params = {k: v for k, v in case.spec.params.items() if k != "gpu_mode"}
    return case.spec.workload, repr(sorted(params.items())), case.spec.device


def _reached(case: CaseResult) -> str:
    settled = [r.telemetry["sustained"] for r in case.rounds if isinstance(r.telemetry.get("sustained"), dict)]
    if not settled:
        return ""
    last = settled[-1]
    parts = [f"{last[k]:.0f} {unit}" for k, unit in (("sm_clock_mhz", "MHz"), ("power_w", "W")) if k in last]
    return f" (sustained reached {', '.join(parts)})" if parts else ""


def _pairs(run: RunResult) -> Iterator[tuple[CaseResult, CaseResult]]:
    by_key: dict[tuple[str, str, str], dict[str, CaseResult]] = {}
    for case in run.cases:
        mode = _mode(case)
        if mode is not None and case.metric(LATENCY) is not None:
            by_key.setdefault(_key(case), {})[mode] = case
    for modes in by_key.values():
        for sustained, bursts in BURSTS.items():
            burst = next((modes[m] for m in bursts if m in modes), None)
            if burst is not None and sustained in modes:
                yield burst, modes[sustained]


def burst_sustained_notes(run: RunResult | None) -> list[str]:
    """One sentence per case whose sustained median differs from its burst median by more than NOTE_ABOVE."""
    notes = []
    for burst, sustained in _pairs(run) if run is not None else ():
        b, s = burst.metric(LATENCY), sustained.metric(LATENCY)
        if b is None or s is None or b.value <= 0:
            continue
        change = s.value / b.value - 1.0
        if abs(change) > NOTE_ABOVE:
            notes.append(
                f"{sustained.id}: sustained median {change:+.1%} against burst ({burst.id}){_reached(sustained)}; "
                "the burst figure is not what a long-running job sees."
            )
    return notes


BOOST_ABOVE = 0.02  # a round's SM clock this far above the sustained clock is named


def _median(values: list[float]) -> float | None:
    values = sorted(values)
    return values[len(values) // 2] if values else None


def sampled_clock(case: CaseResult) -> float | None:
    """The median over rounds of each round's median SM clock while it sampled (NVML, per sample)."""
    per_round = []
    for r in case.rounds:
        gpu = r.telemetry.get("gpu")
        series = gpu.get("sm_clock_mhz") if isinstance(gpu, dict) else None
        clocks = [float(v) for v in series or [] if isinstance(v, int | float)]
        if (m := _median(clocks)) is not None:
            per_round.append(m)
    return _median(per_round)


def boost_notes(run: RunResult | None) -> list[str]:
    """CUDA cases sampled at a clock above the one this GPU holds under sustained load (measured once per runner
    with the peaks): their figures are burst figures, faster than a steady load would see."""
    if run is None:
        return []
    from perfci.reports.case_rows import device_peaks

    held = device_peaks(run.fingerprint, "cuda").get("sustained_sm_clock_mhz")
    if not isinstance(held, int | float) or held <= 0:
        return []
    notes = []
    for case in run.cases:
        clock = sampled_clock(case) if case.spec.device.startswith("cuda") else None
        if clock is not None and clock > held * (1 + BOOST_ABOVE):
            notes.append(
                f"{case.id}: sampled at {clock:.0f} MHz, above the {held:.0f} MHz this GPU holds under sustained "
                "load: a burst figure; a steady load runs slower (gpu_mode sustained measures that)"
            )
    return notes
