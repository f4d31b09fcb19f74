"""The two clocks of CUDA cases in words, for every report: which clock moved ("kernels +1.8% (regression), host
overhead unchanged"), which cases are launch-bound, and each case's top kernels, baseline against candidate, so
a regression names the kernel that moved."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from statistics import median

from perfci.format.model import CaseResult, Comparison, MetricComparison, RunResult, Verdict
from perfci.metrics.registry import DEVICE_TIME, HOST_OVERHEAD, LAUNCH_BOUND_WORDS, launch_bound
from perfci.reports.units import format_value

KERNEL_ROWS = 5  # kernels shown per case


def _change(row: MetricComparison) -> str:
    if row.ratio is None:
        return row.verdict.value
    if row.verdict is Verdict.UNCHANGED:
        return "unchanged"
    return f"{row.ratio - 1:+.1%} ({row.verdict.value})"


def device_cases(comparison: Comparison) -> set[str]:
    """The cases an A/B decides on their device clock: in a paired comparison, every case with a compared
    `device.time` row (ab/orchestrate.py stops on it; the host rows follow the host)."""
    if comparison.mode != "paired":
        return set()
    return {r.case_id for r in comparison.rows if r.metric == DEVICE_TIME and r.ratio is not None}


def deciding_rows(comparison: Comparison) -> list[MetricComparison]:
    """The rows whose sensitivity is the comparison's: every row, except that a case decided on its device
    clock counts by its `device.time` row alone (its latency, host overhead and what derives from the latency
    follow the host, and an A/B does not settle them)."""
    steady = device_cases(comparison)
    return [r for r in comparison.rows if r.case_id not in steady or r.metric == DEVICE_TIME]


def _detects(row: MetricComparison) -> str:
    mdc = row.mdc
    if mdc is None or not math.isfinite(mdc):
        return ""
    shown = f"{mdc * 100:.2g}%" if mdc < 0.1 else f"{mdc * 100:.0f}%"
    return f"; device time could detect {shown}"


def clock_lines(comparison: Comparison) -> list[tuple[str, str]]:
    """(case id, words) for every case with a device-time row: "kernels +1.8% (regression), host overhead
    unchanged; device time could detect 0.3%" and, for a case an A/B decides on its device clock with a host row
    it could not settle, "host rows follow the host: not decided by this A/B"."""
    steady = device_cases(comparison)
    unsettled_host = {
        r.case_id
        for r in comparison.rows
        if r.case_id in steady and r.metric != DEVICE_TIME and r.verdict is Verdict.INCONCLUSIVE
    }
    rows: dict[str, dict[str, MetricComparison]] = defaultdict(dict)
    for r in comparison.rows:
        if r.metric in (DEVICE_TIME, HOST_OVERHEAD):
            rows[r.case_id][r.metric] = r
    out = []
    for case_id, by_metric in rows.items():
        device = by_metric.get(DEVICE_TIME)
        if device is None:
            continue
        host = by_metric.get(HOST_OVERHEAD)
        host_words = f"host overhead {_change(host)}" if host else "host overhead not compared (GPU-bound calls)"
        words = f"kernels {_change(device)}, {host_words}{_detects(device)}"
        if case_id in unsettled_host:
            words += "; host rows follow the host: not decided by this A/B"
        out.append((case_id, words))
    return sorted(out)


def launch_bound_lines(run: RunResult | None) -> list[tuple[str, str]]:
    """(case id, the launch-bound sentence) for each launch-bound case of the run."""
    if run is None:
        return []
    return [(c.id, LAUNCH_BOUND_WORDS) for c in run.cases if launch_bound(c)]


@dataclass(frozen=True)
class KernelRow:
    name: str
    baseline_s: float | None  # median device time per call over the rounds
    candidate_s: float | None

    @property
    def change(self) -> str:
        if self.baseline_s is None:
            return "new"
        if self.candidate_s is None:
            return "gone"
        return f"{self.candidate_s / self.baseline_s - 1:+.1%}" if self.baseline_s > 0 else "-"

    def cells(self) -> tuple[str, str, str, str]:
        b = format_value(self.baseline_s, "s") if self.baseline_s is not None else "-"
        c = format_value(self.candidate_s, "s") if self.candidate_s is not None else "-"
        return self.name, b, c, self.change


def _per_kernel(case: CaseResult | None) -> dict[str, float]:
    if case is None:
        return {}
    times: dict[str, list[float]] = defaultdict(list)
    for r in case.rounds:
        if r.device is not None:
            for k in r.device.top:
                times[k.name].append(k.per_call_s)
    return {name: median(ts) for name, ts in times.items()}


def kernel_rows(baseline: CaseResult | None, candidate: CaseResult | None) -> list[KernelRow]:
    """The case's top kernels (by the larger side's time), baseline against candidate; the ones that moved most
    in absolute time first."""
    b, c = _per_kernel(baseline), _per_kernel(candidate)
    rows = [KernelRow(n, b.get(n), c.get(n)) for n in set(b) | set(c)]
    rows.sort(key=lambda k: (-abs((k.candidate_s or 0.0) - (k.baseline_s or 0.0)), k.name))
    return rows[:KERNEL_ROWS]


def kernel_tables(baseline: RunResult | None, candidate: RunResult | None) -> list[tuple[str, list[KernelRow]]]:
    """(case id, kernel rows) for every candidate case with a device clock."""
    if candidate is None:
        return []
    out = []
    for case in candidate.cases:
        rows = kernel_rows(baseline.case(case.id) if baseline is not None else None, case)
        if rows:
            out.append((case.id, rows))
    return out
