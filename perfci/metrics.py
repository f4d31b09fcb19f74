"""Derive a case's metrics from its raw rounds. Each metric carries unit, direction and an interval."""

from __future__ import annotations

from typing import Any

from perfci.model import Direction, Metric, Round
from perfci.stats.summary import coefficient_of_variation, median, median_ci, quantile

CONFIDENCE = 0.95


def round_medians(rounds: tuple[Round, ...]) -> list[float]:
    """Per-round median time per call: the unit of replication for comparisons."""
    return [median(r.per_call) for r in rounds]


def reference_ratio(r: Round) -> float | None:
    """The round's median per-call time over the median per-call time of the speed reference timed beside it
    (profilers/reference.py); None where the round has no reference."""
    ref = r.telemetry.get("reference_per_call_s")
    if not r.samples or not ref or median(ref) <= 0:
        return None
    return median(r.per_call) / median(ref)


def reference_metrics(rounds: tuple[Round, ...]) -> list[Metric]:
    """`latency.vs_reference`: median over rounds of the per-round ratio to the speed reference."""
    ratios = [x for r in rounds if (x := reference_ratio(r)) is not None]
    if not ratios:
        return []
    lo, hi = median_ci(ratios, CONFIDENCE)
    return [Metric("latency.vs_reference", "x ref", Direction.LOWER, median(ratios), lo, hi, CONFIDENCE)]


def latency_metrics(rounds: tuple[Round, ...]) -> list[Metric]:
    meds = round_medians(rounds)
    lo, hi = median_ci(meds, CONFIDENCE)
    pooled = [x for r in rounds for x in r.per_call]
    out = [
        Metric("latency.median", "s", Direction.LOWER, median(meds), lo, hi, CONFIDENCE),
        Metric("latency.p10", "s", Direction.LOWER, quantile(pooled, 0.10)),
        Metric("latency.p90", "s", Direction.LOWER, quantile(pooled, 0.90)),
        Metric("latency.p99", "s", Direction.LOWER, quantile(pooled, 0.99)),
        Metric("throughput", "calls/s", Direction.HIGHER, 1.0 / median(meds), 1.0 / hi, 1.0 / lo, CONFIDENCE),
    ]
    if len(meds) >= 2:
        out.append(Metric("noise.round_cv", "ratio", Direction.LOWER, coefficient_of_variation(meds)))
    return out


def work_metrics(
    rounds: tuple[Round, ...], flops: float | None, nbytes: float | None, peaks: dict[str, Any] | None = None
) -> list[Metric]:
    """Achieved FLOP/s and GB/s from the work per call over the median latency (interval from latency's),
    and the same as % of the runner's measured peaks when they are known."""
    meds = round_medians(rounds)
    m = median(meds)
    lo, hi = median_ci(meds, CONFIDENCE)
    out: list[Metric] = []
    if flops:
        out.append(Metric("flops", "FLOP/s", Direction.HIGHER, flops / m, flops / hi, flops / lo, CONFIDENCE))
    if nbytes:
        scale = 1e-9
        out.append(
            Metric(
                "bandwidth",
                "GB/s",
                Direction.HIGHER,
                nbytes / m * scale,
                nbytes / hi * scale,
                nbytes / lo * scale,
                CONFIDENCE,
            )
        )
    peaks = peaks or {}
    for metric, key in (("flops", "flops"), ("bandwidth", "bandwidth_gbps")):
        base = next((x for x in out if x.name == metric), None)
        peak = peaks.get(key)
        if base is not None and peak:
            pct = 100.0 / float(peak)
            low, high = (base.low or 0.0) * pct, (base.high or 0.0) * pct
            out.append(Metric(f"{metric}.pct_peak", "%", Direction.HIGHER, base.value * pct, low, high, CONFIDENCE))
    return out


def energy_metrics(rounds: tuple[Round, ...]) -> list[Metric]:
    per_call = [r.telemetry["energy_per_call_j"] for r in rounds if r.telemetry.get("energy_per_call_j")]
    if not per_call:
        return []
    lo, hi = median_ci(per_call, CONFIDENCE)
    return [Metric("energy_per_call", "J", Direction.LOWER, median(per_call), lo, hi, CONFIDENCE)]


def memory_metrics(rounds: tuple[Round, ...]) -> list[Metric]:
    out: list[Metric] = []
    peaks = [r.peak_rss_bytes for r in rounds if r.peak_rss_bytes is not None]
    if peaks:
        out.append(
            Metric("memory.peak_rss", "B", Direction.LOWER, float(max(peaks)), float(min(peaks)), float(max(peaks)))
        )
    incs = [r.rss_increase_bytes for r in rounds if r.rss_increase_bytes is not None]
    if incs:
        out.append(
            Metric("memory.rss_increase", "B", Direction.LOWER, float(median(incs)), float(min(incs)), float(max(incs)))
        )
    dev = [r.peak_device_bytes for r in rounds if r.peak_device_bytes is not None]
    if dev:
        out.append(
            Metric("memory.peak_device", "B", Direction.LOWER, float(max(dev)), float(min(dev)), float(max(dev)))
        )
    return out


def case_metrics(
    rounds: tuple[Round, ...], flops: float | None, nbytes: float | None, peaks: dict[str, Any] | None = None
) -> tuple[Metric, ...]:
    if not rounds:
        return ()
    return tuple(
        latency_metrics(rounds)
        + reference_metrics(rounds)
        + work_metrics(rounds, flops, nbytes, peaks)
        + memory_metrics(rounds)
        + energy_metrics(rounds)
    )
