"""How figures are read off one round: its median and quantiles of the per-call times, rates off the median,
the speed reference's ratio, the device clock, telemetry values. The metric definitions (definitions.py) are
made of these; the case-level statistics (derive.py) use them too."""

from __future__ import annotations

from typing import Any

from perfci.format.model import CaseResult, Round
from perfci.metrics.definition import RoundValue
from perfci.stats.summary import median, sorted_median, sorted_quantile

# host.overhead below this share of the latency is not a figure to compare (latency minus device time is then
# a difference of two nearly equal numbers): the round has no host.overhead value
HOST_OVERHEAD_MIN_SHARE = 0.02
# where a workload's set-up records facts (engine/case_session.py copies the context's notes into each round's
# telemetry): the accuracy check's figures, and the tolerances of metrics that have one (workloads/checks.py)
NOTES = "notes"
ACCURACY_NOTES = "accuracy"
TOLERANCES_NOTES = "tolerances"


def round_median(r: Round, c: CaseResult | None = None) -> float | None:
    """`sorted_median(r.sorted_per_call)`, the same float, without making the round's per-call tuples (a third
    of a 5,000-case comparison's decisions): dividing by the iteration count (positive) keeps the samples'
    order, so the middle samples divided are the middle per-call values."""
    samples = r.samples
    if not samples:
        return None
    known = r.__dict__.get("sorted_per_call")
    if known is not None:
        return sorted_median(known)
    s, its = sorted(samples), r.iterations
    n = len(s)
    mid = n // 2
    return s[mid] / its if n % 2 else 0.5 * (s[mid - 1] / its + s[mid] / its)


def quantile(q: float) -> RoundValue:
    return lambda r, c: sorted_quantile(r.sorted_per_call, q) if r.samples else None


def per_second(attr: str, scale: float = 1.0) -> RoundValue:
    """Work per call (`attr` of the case; "one": one call) over the round's median time, times `scale`."""

    def value(r: Round, c: CaseResult | None) -> float | None:
        work = 1.0 if attr == "one" else getattr(c, attr, None)
        m = round_median(r)
        return work / m * scale if work and m else None

    return value


def field_value(name: str) -> RoundValue:
    def value(r: Round, c: CaseResult | None) -> float | None:
        v = getattr(r, name)
        return float(v) if v is not None else None

    return value


def own_memory(key: str) -> RoundValue:
    """A per-case memory figure; 0 bytes is a value (kept as 1 byte so that ratios stay finite)."""

    def value(r: Round, c: CaseResult | None) -> float | None:
        v = r.telemetry.get(key)
        return max(1.0, float(v)) if v is not None else None

    return value


def telemetry_value(key: str) -> RoundValue:
    def value(r: Round, c: CaseResult | None) -> float | None:
        v = r.telemetry.get(key)
        return float(v) if v else None

    return value


def reference_ratio(r: Round, c: CaseResult | None = None) -> float | None:
    """The round's median per-call time over the median per-call time of the speed reference timed beside it
    (profilers/reference.py); None where the round has no reference."""
    ref = r.telemetry.get("reference_per_call_s")
    latency = round_median(r)
    if latency is None or not ref:
        return None
    ref_median = median(ref)
    return latency / ref_median if ref_median > 0 else None


def device_time(r: Round, c: CaseResult | None = None) -> float | None:
    """The round's median device busy time per call (its device clock); None without one."""
    return median(r.device.samples) if r.device is not None else None


def host_overhead(r: Round, c: CaseResult | None = None) -> float | None:
    """The round's median latency per call minus its median device busy time per call: the part of a call the
    GPU was idle, waiting for the host (launches, Python, synchronisation). None without a device clock, or when
    it is below HOST_OVERHEAD_MIN_SHARE of the latency (a GPU-bound call: nothing to compare)."""
    busy = device_time(r)
    latency = round_median(r) if busy is not None else None
    if busy is None or latency is None:
        return None
    overhead = latency - busy
    return overhead if overhead >= HOST_OVERHEAD_MIN_SHARE * latency else None


def _notes(r: Round) -> dict[str, Any]:
    notes = r.telemetry.get(NOTES)
    return notes if isinstance(notes, dict) else {}


def accuracy_value(key: str) -> RoundValue:
    """A figure of the set-up's accuracy check against the reference (0 is a value: no difference at all)."""

    def value(r: Round, c: CaseResult | None) -> float | None:
        found = _notes(r).get(ACCURACY_NOTES)
        v = found.get(key) if isinstance(found, dict) else None
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

    return value


def tolerance_of(case: CaseResult | None, name: str) -> float | None:
    """The case's tolerance for metric `name`, as its set-up recorded it (the first round that has one)."""
    for r in case.rounds if case is not None else ():
        found = _notes(r).get(TOLERANCES_NOTES)
        v = found.get(name) if isinstance(found, dict) else None
        if isinstance(v, int | float) and not isinstance(v, bool):
            return float(v)
    return None


def shown_apart(value: float, bound: float, digits: int = 2) -> str:
    """`value` with at least `digits` significant digits and as many more as it takes to read differently from
    `bound` as `:g` shows it, for a check's message (workloads/checks.py) and a decision table's accuracy cell
    (reports/decision_lines.py): an error of 0.10037 against a bound of 0.1 read "0.1 exceeds ... <= 0.1". Up to
    17 digits, which tell any two floats apart."""
    shown = f"{value:.{digits}g}"
    for n in range(digits, 18):
        shown = f"{value:.{n}g}"
        if float(shown) != float(f"{bound:g}") and (float(shown) > bound) == (value > bound):
            return shown
    return shown
