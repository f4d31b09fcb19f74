"""Every metric perfci knows, one decorated definition each (definition.py says what a definition owns). This is
the only module that spells a metric's name; `registry.default_registry()` is built from the definitions here.

- timed metrics are compared with the statistical rule on per-round values (compare/decide.py), with a relative
  threshold: 3% on CPU cases, 1% on GPU cases (a launch-bound GPU case's host-set figures take the CPU's 3%);
- untimed ones (memory) are nearly deterministic and compared with a tolerance plus an absolute slack (1%);
- accuracy metrics (the set-up's check of a variant against its reference, on seeded inputs: an A/A gives the
  same values) are compared with an absolute threshold: a tenth of the case's tolerance for the metric.

memory.host / memory.device are the case's own (profilers/case_memory.py); memory.peak_rss and
memory.peak_device are the worker process's high-water marks, shared with every case in it: context only.
device.time / host.overhead exist for CUDA cases only (rounds with a device clock); elsewhere they are left out.
"""

from __future__ import annotations

from perfci.format.model import CaseResult, Direction, Round
from perfci.metrics import rounds
from perfci.metrics.definition import BESPOKE, GREW, SLOWER, Threshold, metric, reported

LOWER, HIGHER = Direction.LOWER, Direction.HIGHER

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
DEVICE_TIME = "device.time"
HOST_OVERHEAD = "host.overhead"
DEVICE_BUSY = "device.busy"  # device time over latency, per call: below LAUNCH_BOUND_BUSY the case is launch-bound
ACCURACY_REL_L2 = "accuracy.rel_l2"
ACCURACY_MAX_ABS = "accuracy.max_abs"
ACCURACY_TOP1 = "accuracy.top1_agree"
# the metrics read off the latency samples (the host's clock for a CUDA case)
LATENCY_FAMILY = (
    LATENCY, LATENCY_MIN, LATENCY_P10, LATENCY_P90, LATENCY_P99, VS_REFERENCE, THROUGHPUT, FLOPS, BANDWIDTH,
)  # fmt: skip
ACCURACY = (ACCURACY_REL_L2, ACCURACY_MAX_ABS, ACCURACY_TOP1)

# timed figures the host sets: 3% on CPU cases and launch-bound GPU cases, 1% on other GPU cases
HOST_SET = Threshold(relative=0.03, gpu=0.01)
# the GPU's own clock: 1% on GPU cases even when launch-bound, and a busy host CPU does not explain its changes
# (compare/decide.py keeps its verdict where the candidate waited for a CPU more than the baseline)
DEVICE_CLOCK = Threshold(relative=0.03, gpu=0.01, host_set=False)
# the host's share of a call moves with the process and the machine far more than the kernels do
OVERHEAD = Threshold(relative=0.05)
MEMORY = Threshold(relative=0.01)
# an error that grew by more than a tenth of the case's tolerance is a regression, even inside the tolerance
ACCURACY_THRESHOLD = Threshold(relative=1e-3, absolute=True, of_tolerance=0.1)
# top-1 agreement has no tolerance: a drop of more than one percentage point of the outputs' rows
TOP1_THRESHOLD = Threshold(relative=0.01, absolute=True)

# a case is launch-bound when its GPU is busy for less than this share of a call's latency
LAUNCH_BOUND_BUSY = 0.5
# round telemetry keys of the per-case figures (written by engine/case_session.py)
OWN_MEMORY_KEYS = {MEMORY_HOST: "memory_host_bytes", MEMORY_DEVICE: "memory_device_bytes"}
ENERGY_KEY = "energy_per_call_j"


@metric(name=LATENCY, unit="s", direction=LOWER, threshold=HOST_SET, compared=True, case_value=BESPOKE, moves=SLOWER)
def latency_median(r: Round, c: CaseResult | None) -> float | None:
    return rounds.round_median(r)


# compared on request only: the case has no latency.min of its own
latency_min = metric(name=LATENCY_MIN, unit="s", direction=LOWER, threshold=HOST_SET, case_value=BESPOKE,
                     moves=SLOWER)(rounds.quantile(0.0))  # fmt: skip
latency_p10 = metric(name=LATENCY_P10, unit="s", direction=LOWER, threshold=HOST_SET, case_value=BESPOKE,
                     moves=SLOWER)(rounds.quantile(0.10))  # fmt: skip
latency_p90 = metric(name=LATENCY_P90, unit="s", direction=LOWER, threshold=HOST_SET, case_value=BESPOKE,
                     moves=SLOWER)(rounds.quantile(0.90))  # fmt: skip
latency_p99 = metric(name=LATENCY_P99, unit="s", direction=LOWER, threshold=HOST_SET, case_value=BESPOKE,
                     moves=SLOWER)(rounds.quantile(0.99))  # fmt: skip
# per-round median over the speed reference's (profilers/reference.py); runs made with --speed-reference only
vs_reference = metric(name=VS_REFERENCE, unit="x ref", direction=LOWER, threshold=HOST_SET, case_value=BESPOKE,
                      moves=SLOWER)(rounds.reference_ratio)  # fmt: skip
throughput = metric(name=THROUGHPUT, unit="calls/s", direction=HIGHER, threshold=HOST_SET, case_value=BESPOKE)(
    rounds.per_second("one")
)  # fmt: skip
flops = metric(name=FLOPS, unit="FLOP/s", direction=HIGHER, threshold=HOST_SET, case_value=BESPOKE)(
    rounds.per_second("flops")
)
bandwidth = metric(name=BANDWIDTH, unit="GB/s", direction=HIGHER, threshold=HOST_SET, case_value=BESPOKE)(
    rounds.per_second("bytes", 1e-9)
)
flops_pct_peak = reported(name=FLOPS_PCT_PEAK, unit="%", direction=HIGHER)
bandwidth_pct_peak = reported(name=BANDWIDTH_PCT_PEAK, unit="%", direction=HIGHER)
energy_per_call = metric(name=ENERGY, unit="J", direction=LOWER, threshold=HOST_SET, moves=SLOWER)(
    rounds.telemetry_value(ENERGY_KEY)
)
device_time = metric(name=DEVICE_TIME, unit="s", direction=LOWER, threshold=DEVICE_CLOCK, compared=True,
                     case_value=BESPOKE)(rounds.device_time)  # fmt: skip
host_overhead = metric(name=HOST_OVERHEAD, unit="s", direction=LOWER, threshold=OVERHEAD, compared=True,
                       case_value=BESPOKE)(rounds.host_overhead)  # fmt: skip
device_busy = reported(name=DEVICE_BUSY, unit="ratio", direction=HIGHER, timed=False)
peak_rss = metric(name=PEAK_RSS, unit="B", direction=LOWER, timed=False, threshold=MEMORY, case_value=BESPOKE,
                  moves=GREW)(rounds.field_value("peak_rss_bytes"))  # fmt: skip
rss_increase = metric(name=RSS_INCREASE, unit="B", direction=LOWER, timed=False, threshold=MEMORY,
                      case_value=BESPOKE, moves=GREW)(rounds.field_value("rss_increase_bytes"))  # fmt: skip
peak_device = metric(name=PEAK_DEVICE, unit="B", direction=LOWER, timed=False, threshold=MEMORY,
                     case_value=BESPOKE, moves=GREW)(rounds.field_value("peak_device_bytes"))  # fmt: skip
memory_host = metric(name=MEMORY_HOST, unit="B", direction=LOWER, timed=False, threshold=MEMORY, compared=True,
                     case_value=BESPOKE, moves=GREW)(rounds.own_memory(OWN_MEMORY_KEYS[MEMORY_HOST]))  # fmt: skip
memory_device = metric(name=MEMORY_DEVICE, unit="B", direction=LOWER, timed=False, threshold=MEMORY, compared=True,
                       case_value=BESPOKE, moves=GREW)(rounds.own_memory(OWN_MEMORY_KEYS[MEMORY_DEVICE]))  # fmt: skip
round_cv = reported(name=ROUND_CV, unit="ratio", direction=LOWER, timed=False)


# ||a - e|| / ||e|| of the variant's outputs against the reference's (the worst output's)
accuracy_rel_l2 = metric(name=ACCURACY_REL_L2, unit="", direction=LOWER, timed=False, threshold=ACCURACY_THRESHOLD,
                         compared=True, column="rel L2 error")(rounds.accuracy_value("rel_l2"))  # fmt: skip
# the largest |a - e| over the outputs, in the outputs' own unit
accuracy_max_abs = metric(name=ACCURACY_MAX_ABS, unit="", direction=LOWER, timed=False, threshold=ACCURACY_THRESHOLD,
                          compared=True, column="max abs diff")(rounds.accuracy_value("max_abs_diff"))  # fmt: skip
# the share of rows whose largest logit is the reference's (for a model whose one output is logits)
accuracy_top1_agree = metric(name=ACCURACY_TOP1, unit="", direction=HIGHER, timed=False, threshold=TOP1_THRESHOLD,
                             compared=True, column="top-1 agree")(rounds.accuracy_value("top1_agree"))  # fmt: skip


# every definition above, in the order reports and the registry list them (registry.default_registry)
DEFINITIONS = (
    latency_median, latency_min, latency_p10, latency_p90, latency_p99, vs_reference, throughput, flops, bandwidth,
    flops_pct_peak, bandwidth_pct_peak, energy_per_call, device_time, host_overhead, device_busy, peak_rss,
    rss_increase, peak_device, memory_host, memory_device, round_cv, accuracy_rel_l2, accuracy_max_abs,
    accuracy_top1_agree,
)  # fmt: skip
