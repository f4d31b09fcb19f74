"""Sweeps: a workload whose parameters take several values (batch size, dtype, runtime, ...), seen as a whole.

A sweep is one workload on one device whose cases differ in at least one parameter (a *swept* parameter: more
than one value among its cases). Its headline metric is the throughput in items per second when the workload
declares its batch (an integer parameter named in BATCH_PARAMS: items per call = its value, so batch sizes are
compared per item), else the median time per call. The best configuration is the case with the best headline
value (lowest time, highest throughput) among the cases whose outputs agree: a case that failed its workload's
correctness check (perfci/workloads/checks.py: an output off its reference, e.g. int8 against fp32) is an error,
and so is every other failed case; neither can be best. Pure functions of the results: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from perfci.format.model import CaseResult, CaseStatus, Direction, ParamValue, RunResult
from perfci.metrics.registry import LATENCY, THROUGHPUT, metric_def

BATCH_PARAMS = ("batch", "batch_size", "bs")
ITEMS_UNIT = "items/s"


@dataclass(frozen=True)
class Headline:
    """One case's headline value with its interval, in the sweep's unit."""

    value: float
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Sweep:
    workload: str
    device: str
    swept: tuple[str, ...]  # the parameters with more than one value, in the workload's order
    metric: str  # the headline metric: THROUGHPUT (per item, see `batch`) or LATENCY
    batch: str | None  # the batch parameter when the metric is items per second
    cases: tuple[CaseResult, ...]  # every case of the workload on this device, in the run's order
    best: CaseResult | None  # None when no case measured the metric with agreeing outputs

    @property
    def unit(self) -> str:
        return ITEMS_UNIT if self.batch else metric_def(self.metric).unit

    @property
    def lower_is_better(self) -> bool:
        return metric_def(self.metric).direction is Direction.LOWER

    def value(self, case: CaseResult) -> Headline | None:
        return headline(case, self.metric, self.batch)

    @property
    def key(self) -> str:
        return f"{self.workload}@{self.device}"

    @property
    def sizes(self) -> tuple[str, ...]:
        """The swept parameters other than the batch whose every value is a number: sizes of the work (`n=384`),
        which do different work, not a choice between ways of doing the same (decision tables rank within one)."""
        return tuple(
            p
            for p in self.swept
            if p != self.batch and all(_is_number(c.spec.params[p]) for c in self.cases if p in c.spec.params)
        )

    def excluded(self) -> list[str]:
        """Cases that cannot be best: failed (a correctness check that did not hold, a crash) or skipped."""
        return [c.id for c in self.cases if c.status is not CaseStatus.OK]


def _is_number(value: ParamValue) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _value_key(value: ParamValue) -> tuple[int, float, str]:
    """Numbers in numeric order before everything else in text order."""
    if _is_number(value):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def swept_values(cases: Iterable[CaseResult], name: str) -> list[ParamValue]:
    """The distinct values of parameter `name` among `cases`, numbers ascending, then the rest as text."""
    seen: dict[str, ParamValue] = {}
    for c in cases:
        if name in c.spec.params:
            seen.setdefault(repr(c.spec.params[name]), c.spec.params[name])
    return sorted(seen.values(), key=_value_key)


def batch_param(cases: list[CaseResult]) -> str | None:
    """The declared batch parameter: one of BATCH_PARAMS with a positive integer value in every case."""
    for name in BATCH_PARAMS:
        values = [c.spec.params.get(name) for c in cases]
        if all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
            return name
    return None


def headline(case: CaseResult, metric: str, batch: str | None) -> Headline | None:
    """The case's value of the sweep's metric (times its batch for items per second); None when not measured
    or when the case failed (its outputs did not agree, or it crashed)."""
    m = case.metric(metric) if case.status is CaseStatus.OK else None
    if m is None:
        return None
    k = float(case.spec.params[batch]) if batch else 1.0
    return Headline(m.value * k, m.low * k if m.low is not None else None, m.high * k if m.high is not None else None)


def best_case(cases: Iterable[CaseResult], metric: str, batch: str | None = None) -> CaseResult | None:
    """The OK case with the best headline value (ties: the first in the run's order)."""
    lower = metric_def(metric).direction is Direction.LOWER
    best: tuple[float, CaseResult] | None = None
    for c in cases:
        h = headline(c, metric, batch)
        if h is None:
            continue
        score = h.value if lower else -h.value
        if best is None or score < best[0]:
            best = (score, c)
    return best[1] if best else None


def find_sweeps(run: RunResult) -> list[Sweep]:
    """Every sweep of the run, in the order its workloads first appear (one pass over the cases)."""
    groups: dict[tuple[str, str], list[CaseResult]] = {}
    for c in run.cases:
        groups.setdefault((c.spec.workload, c.spec.device), []).append(c)
    sweeps = []
    for (workload, device), cases in groups.items():
        names = list(dict.fromkeys(k for c in cases for k in c.spec.params))
        swept = tuple(n for n in names if len(swept_values(cases, n)) > 1)
        if not swept:
            continue
        batch = batch_param(cases)
        metric = THROUGHPUT if batch else LATENCY
        best = best_case(cases, metric, batch)
        sweeps.append(Sweep(workload, device, swept, metric, batch, tuple(cases), best))
    return sweeps


def best_configurations(run: RunResult) -> list[dict[str, Any]]:
    """The best configuration of each sweep, as plain data (`perfci run --format json`: `sweeps`)."""
    out = []
    for s in find_sweeps(run):
        best = None
        h = s.value(s.best) if s.best is not None else None
        if s.best is not None and h is not None:
            best = {"case": s.best.id, "params": dict(s.best.spec.params), "value": h.value, "low": h.low,
                    "high": h.high}  # fmt: skip
        out.append(
            {
                "workload": s.workload,
                "device": s.device,
                "swept": list(s.swept),
                "sizes": list(s.sizes),
                "metric": s.metric,
                "unit": s.unit,
                "per_item_of": s.batch,
                "better": "lower" if s.lower_is_better else "higher",
                "cases": len(s.cases),
                "best": best,
                "excluded": s.excluded(),
            }
        )
    return out
