"""What is compared and how strictly: decision settings, per-metric values per round, practical thresholds.

Metrics compared by default: `latency.median` (timed: statistical rule on per-round medians) and the memory
peaks (near-deterministic: tolerance rule on per-round values). Other metrics can be listed in
`DecisionSettings.metrics`: `latency.min/p10/p90/p99` (per-round minimum and quantiles),
`latency.vs_reference` (per-round median over the speed reference's, profilers/reference.py; needs runs made
with `--speed-reference`), `throughput`, `flops`, `bandwidth` (derived from the per-round medians, so they agree
with latency), `energy_per_call`.

Practical threshold theta for a case and metric, first found wins:
1. `DecisionSettings.threshold` (the CLI's `--threshold`) for timed metrics;
2. the configuration's `thresholds` (`{"kernels.*": {"latency": 0.03, "memory": 0.01}}`, exact metric name
   beats its family, later pattern beats earlier);
3. defaults: timed metrics 3% on CPU, 1% on GPU cases (`@cuda...`); memory 1% (+ 1 MiB absolute slack).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from perfci.metrics import reference_ratio
from perfci.model import CaseResult, Direction, Round
from perfci.patterns import case_pattern
from perfci.stats.summary import median, quantile

DEFAULT_METRICS = ("latency.median", "memory.peak_rss", "memory.peak_device")
CPU_THETA = 0.03
GPU_THETA = 0.01
MEMORY_THETA = 0.01
MEMORY_SLACK_BYTES = float(2**20)
# Cross-job noise assumed for unpaired comparisons when not given: measured 0.11-0.13 between separate
# invocations on a shared 2-core CI VM (docs/quality/stored.md); GPUs of one class are steadier.
CPU_JOB_NOISE = 0.10
GPU_JOB_NOISE = 0.03
# The same for `latency.vs_reference` (CPU only): the speed reference cancels most of the per-job shift; five
# invocations of the default suite spread 7.7-13.7% with 5 rounds, 2.0-5.4% with 20 and 2.8-7.0% with 40, which
# leaves a job term of a couple of percent (docs/measurement.md, "Speed reference").
REFERENCE_JOB_NOISE = 0.03


@dataclass(frozen=True)
class DecisionSettings:
    """How verdicts are reached. `confidence` is one-sided per case and metric, for the whole comparison: it is
    split evenly over `looks` (sequential looks of adaptive A/B) and, with `family="bonferroni"`, over cases."""

    threshold: float | None = None  # override theta for timed metrics (None: configuration, then defaults)
    confidence: float = 0.99
    looks: int = 1
    family: str = "none"  # none | bonferroni
    noise_factor: float = 3.0
    catch: float = 0.75  # a change of exactly theta is flagged with about this probability (stats/decision.py)
    job_noise: float | None = None  # unpaired only: sd of the per-job shift, log scale (None: per device)
    trim: float = 0.2  # paired only: Yuen's trimmed mean of the pair log-ratios (0: the plain paired t)
    metrics: tuple[str, ...] = DEFAULT_METRICS
    thresholds: dict[str, dict[str, float]] = field(default_factory=dict)
    threshold_lookup: Callable[[str, str], float | None] | None = None  # e.g. Config.threshold
    # unpaired only, when job_noise is None: per (case, metric), e.g. compare/history_noise.HistoryNoise; a None
    # answer keeps the default
    job_noise_lookup: Callable[[str, str], float | None] | None = None
    memory_slack_bytes: float = MEMORY_SLACK_BYTES

    def alpha(self, n_cases: int = 1) -> float:
        a = (1.0 - self.confidence) / max(1, self.looks)
        return a / max(1, n_cases) if self.family == "bonferroni" else a

    def as_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "confidence": self.confidence,
            "looks": self.looks,
            "family": self.family,
            "noise_factor": self.noise_factor,
            "catch": self.catch,
            "job_noise": self.job_noise,
            "job_noise_from": "given"
            if self.job_noise is not None
            else ("history" if self.job_noise_lookup is not None else "default"),
            "trim": self.trim,
            "metrics": list(self.metrics),
            "thresholds": self.thresholds,
        }


@dataclass(frozen=True)
class MetricDef:
    name: str
    unit: str
    direction: Direction
    timed: bool  # True: statistical rule on per-round values; False: tolerance rule
    values: Callable[[Round, CaseResult], float | None]


def _round_median(r: Round, c: CaseResult) -> float | None:
    return median(r.per_call) if r.samples else None


def _quantile(q: float) -> Callable[[Round, CaseResult], float | None]:
    return lambda r, c: quantile(r.per_call, q) if r.samples else None


def _per_second(attr: str, scale: float = 1.0) -> Callable[[Round, CaseResult], float | None]:
    def value(r: Round, c: CaseResult) -> float | None:
        work = 1.0 if attr == "one" else getattr(c, attr)
        m = _round_median(r, c)
        return work / m * scale if work and m else None

    return value


def _field(name: str) -> Callable[[Round, CaseResult], float | None]:
    def value(r: Round, c: CaseResult) -> float | None:
        v = getattr(r, name)
        return float(v) if v is not None else None

    return value


def _telemetry(key: str) -> Callable[[Round, CaseResult], float | None]:
    def value(r: Round, c: CaseResult) -> float | None:
        v = r.telemetry.get(key)
        return float(v) if v else None

    return value


METRICS: dict[str, MetricDef] = {
    m.name: m
    for m in (
        MetricDef("latency.median", "s", Direction.LOWER, True, _round_median),
        MetricDef("latency.min", "s", Direction.LOWER, True, _quantile(0.0)),
        MetricDef("latency.p10", "s", Direction.LOWER, True, _quantile(0.10)),
        MetricDef("latency.p90", "s", Direction.LOWER, True, _quantile(0.90)),
        MetricDef("latency.p99", "s", Direction.LOWER, True, _quantile(0.99)),
        MetricDef("latency.vs_reference", "x ref", Direction.LOWER, True, lambda r, c: reference_ratio(r)),
        MetricDef("throughput", "calls/s", Direction.HIGHER, True, _per_second("one")),
        MetricDef("flops", "FLOP/s", Direction.HIGHER, True, _per_second("flops")),
        MetricDef("bandwidth", "GB/s", Direction.HIGHER, True, _per_second("bytes", 1e-9)),
        MetricDef("energy_per_call", "J", Direction.LOWER, True, _telemetry("energy_per_call_j")),
        MetricDef("memory.peak_rss", "B", Direction.LOWER, False, _field("peak_rss_bytes")),
        MetricDef("memory.rss_increase", "B", Direction.LOWER, False, _field("rss_increase_bytes")),
        MetricDef("memory.peak_device", "B", Direction.LOWER, False, _field("peak_device_bytes")),
    )
}


def metric_def(name: str) -> MetricDef:
    try:
        return METRICS[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(METRICS)}") from None


def metric_direction(name: str) -> Direction:
    """Which way is better for a metric (lower when perfci does not know the name, as for latency)."""
    known = METRICS.get(name)
    return known.direction if known is not None else Direction.LOWER


def round_values(case: CaseResult, metric: MetricDef) -> dict[int, float]:
    """Per-round values of a metric, keyed by round index (rounds without the value are left out)."""
    out: dict[int, float] = {}
    for r in case.rounds:
        v = metric.values(r, case)
        if v is not None and v > 0:
            out[r.index] = v
    return out


def _configured(settings: DecisionSettings, case_id: str, metric: str) -> float | None:
    if settings.threshold_lookup is not None:
        found = settings.threshold_lookup(case_id, metric)
        if found is not None:
            return found
    found = None
    family = metric.split(".", 1)[0]
    for pattern, by_metric in settings.thresholds.items():
        if case_pattern(pattern).matches(case_id):
            found = by_metric.get(metric, by_metric.get(family, found))
    return found


def is_gpu(case_id: str) -> bool:
    return case_id.rsplit("@", 1)[-1].startswith("cuda")


def job_noise(settings: DecisionSettings, case_id: str, metric: str = "latency.median") -> float:
    if settings.job_noise is not None:
        return settings.job_noise
    if settings.job_noise_lookup is not None:
        learned = settings.job_noise_lookup(case_id, metric)
        if learned is not None:
            return learned
    if is_gpu(case_id):
        return GPU_JOB_NOISE
    return REFERENCE_JOB_NOISE if metric == "latency.vs_reference" else CPU_JOB_NOISE


def practical_threshold(settings: DecisionSettings, case_id: str, metric: MetricDef) -> float:
    if metric.timed and settings.threshold is not None:
        return settings.threshold
    configured = _configured(settings, case_id, metric.name)
    if configured is not None:
        return configured
    if not metric.timed:
        return MEMORY_THETA
    return GPU_THETA if is_gpu(case_id) else CPU_THETA
