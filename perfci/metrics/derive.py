"""Derive a case's metrics from its raw rounds. Each metric carries unit and direction (from its definition) and
an interval where one is known. The latency family, the device clock, work rates and memory marks have their own
statistics here (`BESPOKE` definitions); every other metric's case value comes from its per-round values by the
generic rule (`FROM_ROUNDS`): their median, with its 95% interval for a timed metric and the rounds' range for
an untimed one."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from perfci.format.model import Metric, Round
from perfci.metrics import registry as reg
from perfci.metrics.definition import MetricDef, MetricRegistry
from perfci.metrics.registry import reference_ratio
from perfci.stats.summary import coefficient_of_variation, median, median_ci, quantile, sorted_median

CONFIDENCE = 0.95
# bandwidth above the runner's measured copy peak by more than this is implausible: the bytes per call count
# traffic the call does not make (docs/measurement.md, "Bytes")
PEAK_TOLERANCE = 0.10


def metric(
    name: str,
    value: float,
    low: float | None = None,
    high: float | None = None,
    confidence: float | None = None,
    registry: MetricRegistry | None = None,
) -> Metric:
    """A Metric whose unit and direction are its definition's."""
    d = (registry or reg.default_registry())[name]
    return Metric(name, d.unit, d.direction, value, low, high, confidence)


def round_medians(rounds: tuple[Round, ...]) -> list[float]:
    """Per-round median time per call: the unit of replication for comparisons (each round's sorted per-call
    times are kept: the report's charts read them again)."""
    return [sorted_median(r.sorted_per_call) for r in rounds]


def reference_metrics(rounds: tuple[Round, ...]) -> list[Metric]:
    """`latency.vs_reference`: median over rounds of the per-round ratio to the speed reference."""
    ratios = [x for r in rounds if (x := reference_ratio(r)) is not None]
    if not ratios:
        return []
    lo, hi = median_ci(ratios, CONFIDENCE)
    return [metric(reg.VS_REFERENCE, median(ratios), lo, hi, CONFIDENCE)]


def latency_metrics(rounds: tuple[Round, ...]) -> list[Metric]:
    meds = round_medians(rounds)
    lo, hi = median_ci(meds, CONFIDENCE)
    pooled = [x for r in rounds for x in r.per_call]
    out = [
        metric(reg.LATENCY, median(meds), lo, hi, CONFIDENCE),
        metric(reg.LATENCY_P10, quantile(pooled, 0.10)),
        metric(reg.LATENCY_P90, quantile(pooled, 0.90)),
        metric(reg.LATENCY_P99, quantile(pooled, 0.99)),
        metric(reg.THROUGHPUT, 1.0 / median(meds), 1.0 / hi, 1.0 / lo, CONFIDENCE),
    ]
    if len(meds) >= 2:
        out.append(metric(reg.ROUND_CV, coefficient_of_variation(meds)))
    return out


def device_metrics(rounds: tuple[Round, ...]) -> list[Metric]:
    """`device.time` and `host.overhead` (median over rounds, with their intervals), and `device.busy` (device
    time over latency), for rounds with a device clock (CUDA cases)."""
    out: list[Metric] = []
    for name, value in ((reg.DEVICE_TIME, reg.device_time), (reg.HOST_OVERHEAD, reg.host_overhead)):
        per_round = [x for r in rounds if (x := value(r)) is not None]
        if per_round:
            lo, hi = median_ci(per_round, CONFIDENCE)
            out.append(metric(name, median(per_round), lo, hi, CONFIDENCE))
    shares = [d / lat for r in rounds if (d := reg.device_time(r)) is not None and (lat := median(r.per_call)) > 0]
    if shares:
        out.append(metric(reg.DEVICE_BUSY, median(shares)))
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
        out.append(metric(reg.FLOPS, flops / m, flops / hi, flops / lo, CONFIDENCE))
    if nbytes:
        scale = 1e-9
        out.append(metric(reg.BANDWIDTH, nbytes / m * scale, nbytes / hi * scale, nbytes / lo * scale, CONFIDENCE))
    peaks = peaks or {}
    for name, pct_name, key in (
        (reg.FLOPS, reg.FLOPS_PCT_PEAK, "flops"),
        (reg.BANDWIDTH, reg.BANDWIDTH_PCT_PEAK, "bandwidth_gbps"),
    ):
        base = next((x for x in out if x.name == name), None)
        peak = peaks.get(key)
        if base is not None and peak:
            pct = 100.0 / float(peak)
            low, high = (base.low or 0.0) * pct, (base.high or 0.0) * pct
            out.append(metric(pct_name, base.value * pct, low, high, CONFIDENCE))
    sources = [r.telemetry.get("work_sources", {}) for r in rounds]
    out = mark_implausible(out, peaks.get("bandwidth_gbps"), any(w.get("bytes") == "declared" for w in sources))
    return mark_implausible_flops(out, peaks.get("flops"), any(w.get("flops") == "declared" for w in sources))


def _past_peak(metrics: list[Metric], name: str, peak: float | None) -> Metric | None:
    """The metric `name` where it is above the runner's measured `peak` by more than PEAK_TOLERANCE, else None."""
    m = next((x for x in metrics if x.name == name), None)
    return m if m is not None and peak and m.value > float(peak) * (1.0 + PEAK_TOLERANCE) else None


def _noted(metrics: list[Metric], names: tuple[str, ...], note: str) -> list[Metric]:
    """`note` on the metrics `names` (an implausible figure and its % of peak): comparisons leave them out."""
    return [replace(m, note=note) if m.name in names else m for m in metrics]


def mark_implausible(metrics: list[Metric], peak_gbps: float | None, declared: bool = False) -> list[Metric]:
    """Bandwidth above the measured copy peak (beyond PEAK_TOLERANCE) cannot be memory traffic: both bandwidth
    metrics get a note saying so, and comparisons leave them out (`registry.implausible`). With bytes the
    workload declared, the likely reason is data that stay in cache (the peak is measured on buffers larger than
    the caches); with derived bytes, traffic counted that the call does not make."""
    bw = _past_peak(metrics, reg.BANDWIDTH, peak_gbps)
    if bw is None or not peak_gbps:
        return metrics
    why = (
        "so the declared bytes mostly stay in cache and this is not memory bandwidth"
        if declared
        else "so the bytes per call count traffic the call does not make; declare ctx.bytes"
    )
    note = (
        f"implausible: {bw.value:.4g} GB/s is {bw.value / float(peak_gbps):.3g}x this runner's measured copy peak "
        f"({float(peak_gbps):.4g} GB/s), {why}. Not compared."
    )
    return _noted(metrics, (reg.BANDWIDTH, reg.BANDWIDTH_PCT_PEAK), note)


def mark_implausible_flops(metrics: list[Metric], peak: float | None, declared: bool = False) -> list[Metric]:
    """FLOP/s above the measured matmul peak, the same way: "112% of peak" would be printed as an achievement. The
    FLOPs per call count work the call does not do (derived: operations the kernels skip or fuse; declared: a
    formula that is off), or the call runs in a faster number format than the peak's matmul (fp32 on a CPU, bf16
    on a GPU). Latency, which FLOP/s is derived from, is still compared."""
    fl = _past_peak(metrics, reg.FLOPS, peak)
    if fl is None or not peak:
        return metrics
    count = "the declared ctx.flops" if declared else "the FLOPs counted per call"
    note = (
        f"implausible: {fl.value / 1e9:.4g} GFLOP/s is {fl.value / float(peak):.3g}x this runner's measured matmul "
        f"peak ({float(peak) / 1e9:.4g} GFLOP/s), so {count} exceed the work the call does, or it runs in a faster "
        "number format than the peak's matmul. Not compared."
    )
    return _noted(metrics, (reg.FLOPS, reg.FLOPS_PCT_PEAK), note)


def from_rounds(rounds: tuple[Round, ...], definition: MetricDef) -> list[Metric]:
    """The generic rule: the median of the per-round values (rounds without one left out), with its 95% interval
    for a timed metric and the rounds' range for an untimed one."""
    values = [v for r in rounds if (v := definition.values(r, None)) is not None]
    if not values:
        return []
    d = definition
    if d.timed:
        lo, hi = median_ci(values, CONFIDENCE)
        return [Metric(d.name, d.unit, d.direction, median(values), lo, hi, CONFIDENCE)]
    return [Metric(d.name, d.unit, d.direction, median(values), min(values), max(values))]


def memory_metrics(rounds: tuple[Round, ...]) -> list[Metric]:
    """The case's own memory (median over rounds, range of rounds) first; the process's marks as context."""
    out: list[Metric] = []
    for name, key in reg.OWN_MEMORY_KEYS.items():
        own = [float(r.telemetry[key]) for r in rounds if r.telemetry.get(key) is not None]
        if own:
            out.append(metric(name, median(own), min(own), max(own)))
    peaks = [r.peak_rss_bytes for r in rounds if r.peak_rss_bytes is not None]
    if peaks:
        out.append(metric(reg.PEAK_RSS, float(max(peaks)), float(min(peaks)), float(max(peaks))))
    incs = [r.rss_increase_bytes for r in rounds if r.rss_increase_bytes is not None]
    if incs:
        out.append(metric(reg.RSS_INCREASE, float(median(incs)), float(min(incs)), float(max(incs))))
    dev = [r.peak_device_bytes for r in rounds if r.peak_device_bytes is not None]
    if dev:
        out.append(metric(reg.PEAK_DEVICE, float(max(dev)), float(min(dev)), float(max(dev))))
    return out


def case_metrics(
    rounds: tuple[Round, ...],
    flops: float | None,
    nbytes: float | None,
    peaks: dict[str, Any] | None = None,
    registry: MetricRegistry | None = None,
) -> tuple[Metric, ...]:
    """Every metric of a case: the bespoke ones, then each of the registry's other metrics its rounds have."""
    if not rounds:
        return ()
    generic = [m for d in (registry or reg.default_registry()).from_rounds() for m in from_rounds(rounds, d)]
    return tuple(
        latency_metrics(rounds)
        + reference_metrics(rounds)
        + device_metrics(rounds)
        + work_metrics(rounds, flops, nbytes, peaks)
        + memory_metrics(rounds)
        + generic
    )
