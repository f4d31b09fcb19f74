"""The one registry of metrics: name, family, unit, direction, timed or not, and how a round's value is taken.

Configuration (threshold keys), comparison (which rule), store (what is kept per round), trend and reports all
read this table; no other module spells a metric name. A metric whose `round_value` is None is reported but not
compared per round (it is derived from others, like `%` of peak, or describes noise).

- timed metrics are compared with the statistical rule on per-round values (compare/decide.py);
- untimed ones (memory) are nearly deterministic and compared with a tolerance plus an absolute slack.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass

from perfci.format.model import CaseResult, Direction, Round
from perfci.stats.summary import median, sorted_median, sorted_quantile, sorted_quantiles

RoundValue = Callable[[Round, CaseResult], float | None]

LATENCY = "latency.median"
LATENCY_MIN = "latency.min"
LATENCY_P10 = "latency.p10"
LATENCY_P90 = "latency.p90"
LATENCY_P99 = "latency.p99"
VS_REFERENCE = "latency.vs_reference"
THROUGHPUT = "throughput"
FLOPS = "flops"
BANDWIDTH = "bandwidth"
FLOPS_PCT_PEAK = "flops.pct_peak"
BANDWIDTH_PCT_PEAK = "bandwidth.pct_peak"
ENERGY = "energy_per_call"
PEAK_RSS = "memory.peak_rss"
RSS_INCREASE = "memory.rss_increase"
PEAK_DEVICE = "memory.peak_device"
MEMORY_HOST = "memory.host"
MEMORY_DEVICE = "memory.device"
ROUND_CV = "noise.round_cv"
# the metrics read off the latency samples (the host's clock for a CUDA case)
LATENCY_FAMILY = (
    LATENCY,
    LATENCY_MIN,
    LATENCY_P10,
    LATENCY_P90,
    LATENCY_P99,
    VS_REFERENCE,
    THROUGHPUT,
    FLOPS,
    BANDWIDTH,
)
DEVICE_TIME = "device.time"
HOST_OVERHEAD = "host.overhead"
DEVICE_BUSY = "device.busy"  # device time over latency, per call: below LAUNCH_BOUND_BUSY the case is launch-bound

# memory.host / memory.device are the case's own (profilers/case_memory.py); memory.peak_rss and
# memory.peak_device are the worker process's high-water marks, shared with every case in it: context only
# device.time / host.overhead exist for CUDA cases only (rounds with a device clock); elsewhere they are left out
DEFAULT_COMPARED = (LATENCY, DEVICE_TIME, HOST_OVERHEAD, MEMORY_HOST, MEMORY_DEVICE)
# a case is launch-bound when its GPU is busy for less than this share of a call's latency
LAUNCH_BOUND_BUSY = 0.5
# host.overhead below this share of the latency is not a figure to compare (latency minus device time is then
# a difference of two nearly equal numbers): the round has no host.overhead value
HOST_OVERHEAD_MIN_SHARE = 0.02
# round telemetry keys of the per-case figures (written by engine/case_session.py)
OWN_MEMORY_KEYS = {MEMORY_HOST: "memory_host_bytes", MEMORY_DEVICE: "memory_device_bytes"}
ENERGY_KEY = "energy_per_call_j"
# the latency quantiles (type 7) and the per-second rates (the work per call, and a scale) off the round's median
_QUANTILES = {LATENCY_MIN: 0.0, LATENCY_P10: 0.10, LATENCY_P90: 0.90, LATENCY_P99: 0.99}
_QUANTILE_LEVELS = tuple(_QUANTILES.values())
_NO_LATENCY = (None,) * (1 + len(_QUANTILES))
_RATES = {THROUGHPUT: ("one", 1.0), FLOPS: ("flops", 1.0), BANDWIDTH: ("bytes", 1e-9)}


@dataclass(frozen=True)
class MetricDef:
    name: str
    unit: str
    direction: Direction
    timed: bool  # True: statistical rule on per-round values; False: tolerance rule
    round_value: RoundValue | None  # a round's value for comparison; None: reported only

    @property
    def family(self) -> str:
        return family_of(self.name)

    @property
    def comparable(self) -> bool:
        return self.round_value is not None

    def values(self, r: Round, c: CaseResult) -> float | None:
        return self.round_value(r, c) if self.round_value is not None else None


def family_of(name: str) -> str:
    return name.split(".", 1)[0]


def reference_ratio(r: Round) -> float | None:
    """The round's median per-call time over the median per-call time of the speed reference timed beside it
    (profilers/reference.py); None where the round has no reference."""
    return _ratio_to_reference(r, _round_median(r))


def _round_median(r: Round, c: CaseResult | None = None) -> float | None:
    """`sorted_median(r.sorted_per_call)`, the same float, without making the round's per-call tuples (a third
    of a 5,000-case comparison's decisions): dividing by the iteration count (positive) keeps the samples'
    order, so the middle samples divided are the middle per-call values."""
    samples = r.samples
    if not samples:
        return None
    known = r.__dict__.get("sorted_per_call")
    if known is not None:
        return sorted_median(known)
    return _per_call_median(sorted(samples), r.iterations)


def _per_call_median(s: list[float], its: int) -> float:
    """The median per-call time of a round's sorted sample times of `its` calls each (the same float as the median
    of its sorted per-call values)."""
    n = len(s)
    mid = n // 2
    return s[mid] / its if n % 2 else 0.5 * (s[mid - 1] / its + s[mid] / its)


def _quantile(q: float) -> RoundValue:
    return lambda r, c: sorted_quantile(r.sorted_per_call, q) if r.samples else None


def _per_second(attr: str, scale: float = 1.0) -> RoundValue:
    def value(r: Round, c: CaseResult) -> float | None:
        work = 1.0 if attr == "one" else getattr(c, attr)
        m = _round_median(r, c)
        return work / m * scale if work and m else None

    return value


def _field(name: str) -> RoundValue:
    def value(r: Round, c: CaseResult) -> float | None:
        v = getattr(r, name)
        return float(v) if v is not None else None

    return value


def _own_memory(key: str) -> RoundValue:
    """A per-case memory figure; 0 bytes is a value (kept as 1 byte so that ratios stay finite)."""

    def value(r: Round, c: CaseResult) -> float | None:
        v = r.telemetry.get(key)
        return max(1.0, float(v)) if v is not None else None

    return value


def _telemetry(key: str) -> RoundValue:
    def value(r: Round, c: CaseResult) -> float | None:
        v = r.telemetry.get(key)
        return float(v) if v else None

    return value


def device_time(r: Round, c: CaseResult | None = None) -> float | None:
    """The round's median device busy time per call (its device clock); None without one."""
    return median(r.device.samples) if r.device is not None else None


def host_overhead(r: Round, c: CaseResult | None = None) -> float | None:
    """The round's median latency per call minus its median device busy time per call: the part of a call the
    GPU was idle, waiting for the host (launches, Python, synchronisation). None without a device clock, or when
    it is below HOST_OVERHEAD_MIN_SHARE of the latency (a GPU-bound call: nothing to compare)."""
    busy = device_time(r)
    return _overhead(_round_median(r) if busy is not None else None, busy)


def launch_bound(case: CaseResult) -> bool:
    """Whether the GPU was busy for less than LAUNCH_BOUND_BUSY of a call (the case's `device.busy`)."""
    m = case.metric(DEVICE_BUSY)
    return m is not None and m.value < LAUNCH_BOUND_BUSY


LAUNCH_BOUND_WORDS = "launch-bound: latency follows the host; device time is the stable figure"


METRICS: dict[str, MetricDef] = {
    m.name: m
    for m in (
        MetricDef(LATENCY, "s", Direction.LOWER, True, _round_median),
        MetricDef(LATENCY_MIN, "s", Direction.LOWER, True, _quantile(_QUANTILES[LATENCY_MIN])),
        MetricDef(LATENCY_P10, "s", Direction.LOWER, True, _quantile(_QUANTILES[LATENCY_P10])),
        MetricDef(LATENCY_P90, "s", Direction.LOWER, True, _quantile(_QUANTILES[LATENCY_P90])),
        MetricDef(LATENCY_P99, "s", Direction.LOWER, True, _quantile(_QUANTILES[LATENCY_P99])),
        MetricDef(VS_REFERENCE, "x ref", Direction.LOWER, True, lambda r, c: reference_ratio(r)),
        MetricDef(THROUGHPUT, "calls/s", Direction.HIGHER, True, _per_second(*_RATES[THROUGHPUT])),
        MetricDef(FLOPS, "FLOP/s", Direction.HIGHER, True, _per_second(*_RATES[FLOPS])),
        MetricDef(BANDWIDTH, "GB/s", Direction.HIGHER, True, _per_second(*_RATES[BANDWIDTH])),
        MetricDef(FLOPS_PCT_PEAK, "%", Direction.HIGHER, True, None),
        MetricDef(BANDWIDTH_PCT_PEAK, "%", Direction.HIGHER, True, None),
        MetricDef(ENERGY, "J", Direction.LOWER, True, _telemetry(ENERGY_KEY)),
        MetricDef(PEAK_RSS, "B", Direction.LOWER, False, _field("peak_rss_bytes")),
        MetricDef(RSS_INCREASE, "B", Direction.LOWER, False, _field("rss_increase_bytes")),
        MetricDef(PEAK_DEVICE, "B", Direction.LOWER, False, _field("peak_device_bytes")),
        MetricDef(MEMORY_HOST, "B", Direction.LOWER, False, _own_memory(OWN_MEMORY_KEYS[MEMORY_HOST])),
        MetricDef(MEMORY_DEVICE, "B", Direction.LOWER, False, _own_memory(OWN_MEMORY_KEYS[MEMORY_DEVICE])),
        MetricDef(ROUND_CV, "ratio", Direction.LOWER, False, None),
        MetricDef(DEVICE_TIME, "s", Direction.LOWER, True, device_time),
        MetricDef(HOST_OVERHEAD, "s", Direction.LOWER, True, host_overhead),
        MetricDef(DEVICE_BUSY, "ratio", Direction.HIGHER, False, None),
    )
}

COMPARABLE: dict[str, MetricDef] = {name: m for name, m in METRICS.items() if m.comparable}
_TIMED_NAMES = tuple(name for name, m in COMPARABLE.items() if m.timed)


def implausible(case: CaseResult, name: str) -> str:
    """Why a case's metric must not be compared ("" when it may): a note derive.py set, e.g. bandwidth above
    the runner's measured copy peak. The per-round bandwidth of such a case is implausible too."""
    if name in (BANDWIDTH, BANDWIDTH_PCT_PEAK):
        m = case.metric(BANDWIDTH)
        return m.note if m is not None else ""
    m = case.metric(name)
    return m.note if m is not None else ""


def metric_def(name: str) -> MetricDef:
    """A comparable metric's definition; ValueError naming the known ones otherwise."""
    try:
        return COMPARABLE[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(COMPARABLE)}") from None


def metric_direction(name: str) -> Direction:
    """Which way is better for a metric (lower when perfci does not know the name, as for latency)."""
    known = METRICS.get(name)
    return known.direction if known is not None else Direction.LOWER


def families() -> tuple[str, ...]:
    return tuple(dict.fromkeys(m.family for m in METRICS.values()))


def threshold_keys() -> frozenset[str]:
    """What a configured threshold may name: a metric or a family of metrics."""
    return frozenset(METRICS) | frozenset(families())


def round_values(case: CaseResult, metric: MetricDef) -> dict[int, float]:
    """Per-round values of a metric, keyed by round index (rounds without the value are left out)."""
    out: dict[int, float] = {}
    for r in case.rounds:
        v = metric.values(r, case)
        if v is not None and v > 0:
            out[r.index] = v
    return out


def timed_round_values(c: CaseResult, wanted: Container[str] | None = None) -> dict[str, list[float | None]]:
    """Every timed comparable metric's per-round values of a case (those named in `wanted`, when given), by name, in
    round order (None where a round has none): the same floats as each metric's `round_value(r, c)`
    (tests/unit/test_timed_round_values.py checks them), from one sort of each round's samples. The history store
    keeps the round statistics of every timed metric a case has; one metric at a time through the definitions, a
    round's samples were sorted twice, its per-call tuples made and its median taken seven times."""
    rounds = c.rounds
    if not rounds:
        return {name: [] for name in _TIMED_NAMES if wanted is None or name in wanted}
    latency, *quantiles = map(list, zip(*[_latency_figures(r) for r in rounds], strict=True))
    out: dict[str, list[float | None]] = {LATENCY: latency, **dict(zip(_QUANTILES, quantiles, strict=True))}

    def want(name: str) -> bool:
        return wanted is None or name in wanted

    if want(VS_REFERENCE):
        out[VS_REFERENCE] = [_ratio_to_reference(r, m) for r, m in zip(rounds, latency, strict=True)]
    for name, (attr, scale) in _RATES.items():
        if want(name):
            work = 1.0 if attr == "one" else getattr(c, attr)
            out[name] = [work / m * scale if work and m else None for m in latency]
    if want(ENERGY):
        out[ENERGY] = [float(v) if (v := r.telemetry.get(ENERGY_KEY)) else None for r in rounds]
    if want(DEVICE_TIME) or want(HOST_OVERHEAD):
        busy = [device_time(r) for r in rounds]
        if want(DEVICE_TIME):
            out[DEVICE_TIME] = busy
        if want(HOST_OVERHEAD):
            out[HOST_OVERHEAD] = [_overhead(m, b) for m, b in zip(latency, busy, strict=True)]
    return out if wanted is None else {name: v for name, v in out.items() if name in wanted}


def _latency_figures(r: Round) -> tuple[float | None, ...]:
    """The round's median per-call time, then its `_QUANTILES` of the per-call times, as `_round_median` and
    `_quantile` take them (all None without samples)."""
    if not r.samples:
        return _NO_LATENCY
    known = r.__dict__.get("sorted_per_call")
    if known is not None:
        return sorted_median(known), *sorted_quantiles(known, _QUANTILE_LEVELS)
    s, its = sorted(r.samples), r.iterations
    return _per_call_median(s, its), *sorted_quantiles(s, _QUANTILE_LEVELS, its)


def _ratio_to_reference(r: Round, latency: float | None) -> float | None:
    """`reference_ratio(r)` given the round's median per-call time (None without samples)."""
    ref = r.telemetry.get("reference_per_call_s")
    if latency is None or not ref:
        return None
    ref_median = median(ref)
    return latency / ref_median if ref_median > 0 else None


def _overhead(latency: float | None, busy: float | None) -> float | None:
    """`host_overhead` given the round's median per-call time and its median device busy time."""
    if busy is None or latency is None:
        return None
    overhead = latency - busy
    return overhead if overhead >= HOST_OVERHEAD_MIN_SHARE * latency else None
