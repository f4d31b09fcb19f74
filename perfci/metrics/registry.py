"""The registry of metrics everyone reads: `default_registry()`, built from the definitions (definitions.py), and
what is asked of a metric by name. A registry is an object (definition.MetricRegistry), passed where a caller
may bring its own (`DecisionSettings.registry`, `prepare_run(run, registry)`, `case_metrics(..., registry)`,
the run tables); the functions here without one read the default registry.

Configuration (threshold keys), comparison (which rule, which threshold), store (what is kept per round), trend
and reports all read the definitions; no other module spells a metric name.
"""

from __future__ import annotations

from functools import cache

from perfci.format.model import CaseResult, Direction
from perfci.metrics import definitions
from perfci.metrics.definition import MetricDef, MetricRegistry
from perfci.metrics.definitions import (
    ACCURACY,
    ACCURACY_MAX_ABS,
    ACCURACY_REL_L2,
    ACCURACY_TOP1,
    BANDWIDTH,
    BANDWIDTH_PCT_PEAK,
    DEVICE_BUSY,
    DEVICE_TIME,
    ENERGY,
    ENERGY_KEY,
    FLOPS,
    FLOPS_PCT_PEAK,
    HOST_OVERHEAD,
    LATENCY,
    LATENCY_FAMILY,
    LATENCY_MIN,
    LATENCY_P10,
    LATENCY_P90,
    LATENCY_P99,
    LAUNCH_BOUND_BUSY,
    MEMORY_DEVICE,
    MEMORY_HOST,
    OWN_MEMORY_KEYS,
    PEAK_DEVICE,
    PEAK_RSS,
    ROUND_CV,
    RSS_INCREASE,
    THROUGHPUT,
    VS_REFERENCE,
)
from perfci.metrics.rounds import HOST_OVERHEAD_MIN_SHARE, device_time, host_overhead, reference_ratio, tolerance_of

__all__ = [
    "ACCURACY",
    "ACCURACY_MAX_ABS",
    "ACCURACY_REL_L2",
    "ACCURACY_TOP1",
    "BANDWIDTH",
    "BANDWIDTH_PCT_PEAK",
    "DEFAULT_COMPARED",
    "DEVICE_BUSY",
    "DEVICE_TIME",
    "ENERGY",
    "ENERGY_KEY",
    "FLOPS",
    "FLOPS_PCT_PEAK",
    "HOST_OVERHEAD",
    "HOST_OVERHEAD_MIN_SHARE",
    "LATENCY",
    "LATENCY_FAMILY",
    "LATENCY_MIN",
    "LATENCY_P10",
    "LATENCY_P90",
    "LATENCY_P99",
    "LAUNCH_BOUND_BUSY",
    "MEMORY_DEVICE",
    "MEMORY_HOST",
    "OWN_MEMORY_KEYS",
    "PEAK_DEVICE",
    "PEAK_RSS",
    "ROUND_CV",
    "RSS_INCREASE",
    "THROUGHPUT",
    "VS_REFERENCE",
    "MetricDef",
    "MetricRegistry",
    "default_registry",
    "device_time",
    "host_overhead",
    "reference_ratio",
    "tolerance_of",
]


@cache
def default_registry() -> MetricRegistry:
    """Every metric defined in definitions.py (`DEFINITIONS`), in that order (built once, immutable)."""
    return MetricRegistry(definitions.DEFINITIONS)


# what a comparison looks at unless told otherwise (the definitions marked `compared`)
DEFAULT_COMPARED = default_registry().compared_by_default()


def launch_bound(case: CaseResult) -> bool:
    """Whether the GPU was busy for less than LAUNCH_BOUND_BUSY of a call (the case's `device.busy`)."""
    m = case.metric(DEVICE_BUSY)
    return m is not None and m.value < LAUNCH_BOUND_BUSY


LAUNCH_BOUND_WORDS = "launch-bound: latency follows the host; device time is the stable figure"


def implausible(case: CaseResult, name: str) -> str:
    """Why a case's metric must not be compared ("" when it may): a note derive.py set, e.g. bandwidth above
    the runner's measured copy peak, FLOP/s above its matmul peak. The per-round figures of such a case are
    implausible too."""
    of_peak = {BANDWIDTH_PCT_PEAK: BANDWIDTH, FLOPS_PCT_PEAK: FLOPS}
    m = case.metric(of_peak.get(name, name))
    return m.note if m is not None else ""


def metric_def(name: str, registry: MetricRegistry | None = None) -> MetricDef:
    """A comparable metric's definition; ValueError naming the known ones otherwise."""
    return (registry or default_registry()).comparable(name)


def metric_direction(name: str) -> Direction:
    """Which way is better for a metric (lower when perfci does not know the name, as for latency)."""
    return default_registry().direction(name)


def threshold_keys() -> frozenset[str]:
    """What a configured threshold may name: a metric or a family of metrics."""
    return default_registry().threshold_keys()


def absolute_threshold_keys() -> frozenset[str]:
    """The threshold keys whose configured threshold is absolute, in the metric's unit (not `3%`)."""
    return default_registry().absolute_threshold_keys()


def round_values(case: CaseResult, metric: MetricDef) -> dict[int, float]:
    """Per-round values of a metric, keyed by round index (rounds without the value are left out; so are values
    that are not positive, but for a metric with an absolute threshold, whose 0 is a value: no error at all)."""
    zero_ok = metric.threshold.absolute
    out: dict[int, float] = {}
    for r in case.rounds:
        v = metric.values(r, case)
        if v is not None and (v > 0 or (zero_ok and v == 0)):
            out[r.index] = v
    return out
