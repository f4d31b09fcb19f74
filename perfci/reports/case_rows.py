"""What the HTML report shows as text: case rows, the runner fingerprint, revisions, mismatches, runtime groups.

Plain data (dicts of strings and numbers) for the template; no markup is built here, so autoescaping covers
every string that came from a results file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from perfci.format.model import CaseResult, CaseStatus, Comparison, GitInfo, RunResult
from perfci.metrics.definition import MetricDef, MetricRegistry
from perfci.metrics.registry import (
    BANDWIDTH,
    BANDWIDTH_PCT_PEAK,
    ENERGY,
    FLOPS,
    FLOPS_PCT_PEAK,
    LATENCY,
    LATENCY_P90,
    MEMORY_DEVICE,
    MEMORY_HOST,
    PEAK_RSS,
    ROUND_CV,
    VS_REFERENCE,
    default_registry,
    tolerance_of,
)
from perfci.reports.decisions import BY_TIME, DecisionView
from perfci.reports.units import (
    format_bytes,
    format_change_interval,
    format_ratio,
    format_seconds,
    format_value,
    format_vs_reference,
)
from perfci.reports.verdicts import expected_reason, format_mdc, sort_rows, verdict_rank

# Cases of one model run through several runtimes differ only by this parameter (eager|compile|ort|...).
RUNTIME_PARAM = "runtime"

# Fingerprint entries that differ between two machines of one runner class without making results incomparable.
_NOT_COMPARED = ("uuid", "peaks", "gpu_note", "hostname", "cpu_affinity_cores")


@dataclass(frozen=True)
class ReportInput:
    """What one report is about: a run, optionally compared with a baseline run (either side may be absent)."""

    candidate: RunResult | None
    comparison: Comparison | None = None
    baseline: RunResult | None = None
    decisions: DecisionView = BY_TIME

    @cached_property
    def _index(self) -> tuple[dict[str, CaseResult], dict[str, CaseResult]]:
        def by_id(run: RunResult | None) -> dict[str, CaseResult]:
            return {c.id: c for c in run.cases} if run is not None else {}

        return by_id(self.baseline), by_id(self.candidate)

    def cases(self, case_id: str) -> tuple[CaseResult | None, CaseResult | None]:
        """(baseline, candidate) results of one case, by id (indexed once: `RunResult.case` is a linear scan)."""
        base, cand = self._index
        return base.get(case_id), cand.get(case_id)


def _num(x: float | None) -> float | str:
    """A sort key for `data-v` (six significant digits are plenty to order by)."""
    return "" if x is None else float(f"{x:.6g}")


@dataclass(frozen=True, slots=True)
class ComparisonRow:
    """One row of the report's comparison table: the cells as shown (text) and the sort keys (`*_v`, `data-v`)."""

    case: str
    metric: str
    verdict: str
    rank: int
    change: str
    ratio: float | str
    interval: str
    mdc: str
    mdc_v: float | str
    baseline: str
    baseline_v: float | str
    candidate: str
    candidate_v: float | str
    noise: str
    noise_v: float | str
    note: str


def comparison_rows(inp: ReportInput) -> list[ComparisonRow]:
    """The comparison table's rows, most urgent verdict first (attributes, not dict keys: the template's lookups of
    5,000 rows take a third less time)."""
    assert inp.comparison is not None
    rows = []
    for r in sort_rows(inp.comparison.rows):
        _, cand = inp.cases(r.case_id)
        cv = cand.metric(ROUND_CV) if cand else None
        note = (r.note, expected_reason(r) and f"expected: {expected_reason(r)}", throttle_note(cand))
        rows.append(
            ComparisonRow(
                case=r.case_id,
                metric=r.metric,
                verdict=r.verdict.value,
                rank=verdict_rank(r.verdict),
                change=format_ratio(r.ratio),
                ratio=_num(r.ratio),
                interval=format_change_interval(r.ratio_low, r.ratio_high, r.baseline, r.unit),
                mdc=format_mdc(r.mdc),
                mdc_v=_num(r.mdc),
                baseline=format_value(r.baseline, r.unit),
                baseline_v=_num(r.baseline),
                candidate=format_value(r.candidate, r.unit),
                candidate_v=_num(r.candidate),
                noise=f"{cv.value * 100:.1f}%" if cv else "-",
                noise_v=_num(cv.value if cv else None),
                note="; ".join(x for x in note if x),
            )
        )
    return rows


def device_peaks(fp: dict[str, Any], device: str) -> dict[str, Any]:
    """The runner's measured peaks for `device` (`fingerprint["peaks"]` is keyed by device type: cpu, cuda)."""
    peaks = fp.get("peaks") or {}
    if any(isinstance(v, dict) for v in peaks.values()):
        found = peaks.get(device.split(":")[0])
        return found if isinstance(found, dict) else {}
    return peaks


def throttle_note(case: CaseResult | None) -> str:
    """`N samples throttled (M dropped)` from the rounds' telemetry, or '' when none were (or none recorded)."""
    if case is None:
        return ""
    flagged = sum(int(r.telemetry.get("throttle_flagged") or 0) for r in case.rounds)
    dropped = sum(int(r.telemetry.get("throttle_dropped") or 0) for r in case.rounds)
    if not flagged and not dropped:
        return ""
    return f"{flagged} samples throttled" + (f" ({dropped} dropped)" if dropped else "")


def _peak_pct(case: CaseResult, metric: str, pct_metric: str, peak: Any) -> str:
    m, pct = case.metric(metric), case.metric(pct_metric)
    if pct is not None:
        return f" ({pct.value:.0f}% of peak)"
    if m is None or not isinstance(peak, int | float) or peak <= 0:
        return ""
    return f" ({m.value / peak * 100:.0f}% of peak)"


@dataclass(frozen=True, slots=True)
class MetricCell:
    """A run-table cell of a metric with a column of its own: its text and its sort key."""

    text: str
    v: float | str


@dataclass(frozen=True, slots=True)
class RunRow:
    """One row of the report's run table (a plain run): the cells as shown and the sort keys (`*_v`)."""

    case: str
    status: str
    rank: int
    median: str
    median_v: float | str
    interval: str
    p90: str
    noise: str
    noise_v: float | str
    rounds: int
    bandwidth: str
    bandwidth_v: float | str
    flops: str
    flops_v: float | str
    memory: str
    memory_v: float | str
    energy: str
    energy_v: float | str
    vs_ref: str
    vs_ref_v: float | str
    metrics: list[MetricCell]
    notes: str


def run_rows(run: RunResult) -> list[RunRow]:
    """The run table's rows, failed cases first."""
    rows = []
    extra = metric_columns(run)  # the metrics with a column of their own (accuracy...), as `metric_titles` lists
    for c in run.cases:
        peaks = device_peaks(run.fingerprint, c.spec.device)
        energy, ref = c.metric(ENERGY), c.metric(VS_REFERENCE)
        med, cv, bw, fl = (c.metric(n) for n in (LATENCY, ROUND_CV, BANDWIDTH, FLOPS))
        p90, rss, dev = (c.metric(n) for n in (LATENCY_P90, MEMORY_HOST, MEMORY_DEVICE))
        proc = c.metric(PEAK_RSS)
        error = c.status is CaseStatus.ERROR
        rows.append(
            RunRow(
                case=c.id,
                status=c.status.value,
                rank=0 if error else 1,
                median=format_seconds(med.value if med else None),
                median_v=_num(med.value if med else None),
                interval=f"{format_seconds(med.low)} .. {format_seconds(med.high)}" if med else "-",
                p90=format_seconds(p90.value if p90 else None),
                noise=f"{cv.value * 100:.1f}%" if cv else "-",
                noise_v=_num(cv.value if cv else None),
                rounds=len(c.rounds),
                bandwidth=format_value(bw.value, bw.unit)
                + _peak_pct(c, BANDWIDTH, BANDWIDTH_PCT_PEAK, peaks.get("bandwidth_gbps"))
                + (" implausible" if bw.note else "")
                if bw
                else "-",
                bandwidth_v=_num(bw.value if bw else None),
                flops=format_value(fl.value, fl.unit)
                + _peak_pct(c, FLOPS, FLOPS_PCT_PEAK, peaks.get("flops"))
                + (" implausible" if fl.note else "")
                if fl
                else "-",
                flops_v=_num(fl.value if fl else None),
                memory=format_bytes(rss.value if rss else None)
                + (f" / device {format_bytes(dev.value)}" if dev else "")
                + (f" (process peak {format_bytes(proc.value)})" if proc else ""),
                memory_v=_num(rss.value if rss else None),
                energy=f"{energy.value:.3g} J" if energy else "-",
                energy_v=_num(energy.value if energy else None),
                vs_ref=format_vs_reference(ref.value, ref.low, ref.high) if ref else "-",
                vs_ref_v=_num(ref.value if ref else None),
                metrics=[
                    MetricCell(metric_cell(c, d), _num(m.value if (m := c.metric(d.name)) else None)) for d in extra
                ],
                notes="; ".join(
                    x
                    for x in (
                        *(f"{e.kind}: {e.message}" for e in c.errors),
                        throttle_note(c),
                        bw and bw.note,
                        fl and fl.note,
                    )
                    if x
                ),
            )
        )
    return sorted(rows, key=lambda r: r.rank)


def metric_titles(run: RunResult | None) -> list[str]:
    """The titles of the run table's columns of metrics with a column of their own (`run_rows`' "metrics")."""
    return [d.column for d in metric_columns(run)] if run is not None else []


def metric_columns(run: RunResult, registry: MetricRegistry | None = None) -> tuple[MetricDef, ...]:
    """The metrics with a column of their own in run tables (`MetricDef.column`) that some case of `run` has."""
    present = {m.name for c in run.cases for m in c.metrics}
    return tuple(d for d in (registry or default_registry()).columns() if d.name in present)


def metric_cell(case: CaseResult, definition: MetricDef) -> str:
    """A case's value of a metric in its column, with the case's tolerance for it where it has one
    ("0.0123 (tolerance 0.05)"); "-" where the case has no value."""
    m = case.metric(definition.name)
    if m is None:
        return "-"
    tolerance = tolerance_of(case, definition.name)
    limit = f" (tolerance {format_value(tolerance, m.unit)})" if tolerance is not None else ""
    return format_value(m.value, m.unit) + limit


def fingerprint_summary(fp: dict[str, Any]) -> list[tuple[str, str]]:
    libs = fp.get("libraries") or {}
    gpus = fp.get("gpus") or []
    mem = fp.get("memory_total_bytes")
    items = [
        ("CPU", f"{fp.get('cpu_model', '?')} ({fp.get('cpu_logical_cores', '?')} logical cores)"),
        ("memory", format_bytes(mem) if isinstance(mem, int | float) else "-"),
        ("OS", f"{fp.get('os', '?')} {fp.get('machine', '')}".strip()),
        ("Python", str(fp.get("python", "?"))),
        ("libraries", ", ".join(f"{k} {v}" for k, v in libs.items() if v) or "-"),
        ("GPUs", ", ".join(str(g.get("name", "?")) for g in gpus) or str(fp.get("gpu_note") or "none")),
    ]
    if fp.get("gpu_driver") or fp.get("cuda_driver"):
        items.append(("driver", f"{fp.get('gpu_driver') or '-'} (CUDA {fp.get('cuda_driver') or '-'})"))
    peaks = fp.get("peaks") or {}
    per_device = peaks if any(isinstance(v, dict) for v in peaks.values()) else {"": peaks} if peaks else {}
    for device, p in per_device.items():
        if isinstance(p, dict):
            items.append((f"measured peaks {device}".strip(), _peaks_text(p)))
    return items


def _peaks_text(p: dict[str, Any]) -> str:
    bw, fl = p.get("bandwidth_gbps"), p.get("flops")
    parts = [
        f"{bw:.4g} GB/s" if isinstance(bw, int | float) else "",
        format_value(fl, "FLOP/s") if isinstance(fl, int | float) else "",
        f"({p['method']})" if p.get("method") else "",
    ]
    return " ".join(x for x in parts if x) or json.dumps(p)


def _flatten(value: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(value, list):
        out = {}
        for i, v in enumerate(value):
            out.update(_flatten(v, f"{prefix}[{i}]"))
        return out
    return {prefix: json.dumps(value)}


def fingerprint_mismatches(base: dict[str, Any], cand: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(key, baseline value, candidate value) for each comparable fingerprint entry that differs."""
    fb, fc = _flatten(base), _flatten(cand)
    keys = [k for k in dict.fromkeys([*fb, *fc]) if not any(word in k for word in _NOT_COMPARED)]
    return [(k, fb.get(k, "absent"), fc.get(k, "absent")) for k in keys if fb.get(k) != fc.get(k)]


def _git_text(git: GitInfo | dict[str, Any] | None) -> str:
    if git is None:
        return "no git information"
    g = git if isinstance(git, dict) else {"commit": git.commit, "branch": git.branch, "dirty": git.dirty}
    commit = str(g.get("commit") or "?")[:12]
    return f"{commit} on {g.get('branch') or '?'}" + (", dirty" if g.get("dirty") else "")


def side_info(label: str, run: RunResult | None, saved: dict[str, Any]) -> dict[str, str]:
    """One side of the comparison: its label, run id, revision, time."""
    if run is not None:
        return {"label": label, "run": run.run_id, "git": _git_text(run.git), "when": run.started_at}
    return {
        "label": label,
        "run": str(saved.get("run_id", "-")),
        "git": _git_text(saved.get("git")) if saved else "-",
        "when": str(saved.get("started_at", "")),
    }


def side_fingerprint(run: RunResult | None, saved: dict[str, Any]) -> dict[str, Any]:
    if run is not None:
        return run.fingerprint
    fp = saved.get("fingerprint")
    return fp if isinstance(fp, dict) else {}


def runtime_groups(run: RunResult, param: str = RUNTIME_PARAM) -> tuple[list[str], list[dict[str, Any]]]:
    """Cases that differ only by `param`, side by side: (runtimes, groups). Only groups of two or more."""
    groups: dict[str, dict[str, CaseResult]] = {}
    for c in run.cases:
        if param not in c.spec.params:
            continue
        rest = {k: v for k, v in c.spec.params.items() if k != param}
        key = c.spec.workload + (f"[{','.join(f'{k}={v}' for k, v in rest.items())}]" if rest else "")
        groups.setdefault(f"{key}@{c.spec.device}", {})[str(c.spec.params[param])] = c
    groups = {k: v for k, v in groups.items() if len(v) >= 2}
    runtimes = list(dict.fromkeys(r for g in groups.values() for r in g))
    out = []
    for key, members in groups.items():
        meds = {r: m.value for r, c in members.items() if (m := c.metric(LATENCY))}
        best = min(meds.values()) if meds else None
        cells = {}
        for r, c in members.items():
            v = meds.get(r)
            if v is None:
                cells[r] = {"text": c.status.value, "best": False, "rel": ""}
            else:
                rel = f"{v / best:.2f}x" if best else ""
                cells[r] = {"text": format_seconds(v), "best": v == best, "rel": rel}
        out.append({"group": key, "cells": cells})
    return runtimes, out
