"""The compact data behind the report's charts: one JSON blob per page, drawn in the browser by plotly.js.

Case ids are stored once (`cases`) and referred to by index. Numbers keep 4 significant digits. Raw samples
are bounded per case and side (`max_samples`, chosen at evenly spaced quantiles, so the distribution's shape
survives), so a 500-case comparison stays small.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from operator import itemgetter
from typing import Any

import numpy as np

from perfci.format.model import CaseResult, CaseStatus, RunResult, Verdict
from perfci.metrics import round_medians
from perfci.metrics.registry import FLOPS, LATENCY, MEMORY_DEVICE, MEMORY_HOST
from perfci.reports.case_rows import ReportInput, device_peaks
from perfci.reports.sweeps import Sweep, find_sweeps, swept_values
from perfci.reports.units import relative_threshold
from perfci.reports.verdicts import sort_rows

MAX_SAMPLES = 32
MAX_TELEMETRY_POINTS = 1500
GPU_SERIES = ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c")
_BENIGN_THROTTLE = {"gpu_idle", "applications_clocks_setting", "display_clocks_setting", "none", ""}
_TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))


def r4(x: float | None) -> float | None:
    """Four significant digits (None and non-finite values become None)."""
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.4g}")


_TIE = 1e-6  # a scaled value this close to half an integer is rounded one by one, as r4 does (the binary value decides)


def r4_all(xs: Sequence[float | None], scale: float | Sequence[float] = 1.0) -> list[float | None]:
    """`r4(x / scale)` of each value (None stays None; `scale` one number, or one per value), in bulk with numpy:
    the same floats as `r4` one by one, which a chart's 450,000 values of a 5,000-case comparison would take a
    second to go through.
    Values near a rounding tie, zeros, non-finite values and values beyond 1e+-22 take `r4`'s own path."""
    a = np.asarray(xs, dtype=np.float64)
    if a.size == 0:
        return []
    with np.errstate(all="ignore"):
        a = a / np.asarray(scale, dtype=np.float64)
        digits = 3.0 - np.floor(np.log10(np.abs(a)))  # decimal places that keep four significant digits
        plain = np.isfinite(digits) & (np.abs(digits) <= 22.0)  # 10**22: the largest power of ten a float holds
        digits = np.where(plain, digits, 0.0)
        power = 10.0 ** np.abs(digits)  # exact; multiplied or divided by, never 10**-k (inexact)
        up = digits >= 0
        shifted = np.where(up, a * power, a / power)
        whole = np.round(shifted)
        tie = np.abs(np.abs(shifted - np.trunc(shifted)) - 0.5) < _TIE
        out: list[float | None] = np.where(up, whole / power, whole * power).tolist()
    for i in np.flatnonzero(~plain | tie).tolist():
        out[i] = r4(float(a[i]))
    return out


def bounded(values: Sequence[float], limit: int) -> list[float]:
    """At most `limit` values at evenly spaced quantiles of the sorted input (all of them when fewer)."""
    xs = sorted(values)
    if len(xs) <= limit:
        return xs
    return list(_quantile_picks(len(xs), limit)(xs))


@lru_cache(maxsize=1024)
def _quantile_picks(n: int, limit: int) -> Callable[[Sequence[float]], tuple[float, ...]]:
    """The positions `bounded` keeps of n sorted values, as one getter (the same few n recur case after case)."""
    return itemgetter(*(round(i * (n - 1) / (limit - 1)) for i in range(limit)))


def time_unit(seconds: float) -> tuple[str, float]:
    return next(((u, s) for u, s in _TIME_UNITS if seconds >= s), _TIME_UNITS[-1])


class _Index:
    """Case ids stored once; charts refer to a case by its position."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self._pos: dict[str, int] = {}

    def __call__(self, case_id: str) -> int:
        if case_id not in self._pos:
            self._pos[case_id] = len(self.ids)
            self.ids.append(case_id)
        return self._pos[case_id]


def _case_order(inp: ReportInput) -> list[str]:
    """Case ids in the table's order: most urgent verdict first (comparison) or errors first (run)."""
    if inp.comparison is not None:
        return list(dict.fromkeys(r.case_id for r in sort_rows(inp.comparison.rows)))
    cases = inp.candidate.cases if inp.candidate else ()
    return [c.id for c in sorted(cases, key=lambda c: c.status is not CaseStatus.ERROR)]


def distributions(inp: ReportInput, idx: _Index, limit: int) -> list[dict[str, Any]]:
    """Per case and side: the round medians ("r") and at most `limit` raw samples ("s") in the case's time unit;
    every value of every case rounded in one bulk call."""
    out: list[dict[str, Any]] = []
    values: list[float] = []  # every side's medians then samples, in order
    scales: list[float] = []
    spans: list[tuple[dict[str, Any], str, int, int]] = []  # (side's dict, key, count of medians, of samples)
    for cid in _case_order(inp):
        base, cand = inp.cases(cid)
        sides = [(key, c, round_medians(c.rounds)) for key, c in (("n", cand), ("b", base)) if c and c.rounds]
        if not sides:
            continue
        unit, scale = time_unit(min(sides[0][2]))
        entry: dict[str, Any] = {"c": idx(cid), "u": unit, "b": None, "n": None}
        for key, case, medians in sides:
            # runs of sorted values (each round's, kept by round_medians): sorted merges them, no full sort
            samples = bounded([x for r in case.rounds for x in r.sorted_per_call], limit)
            values += medians
            values += samples
            scales += [scale] * (len(medians) + len(samples))
            spans.append((entry, key, len(medians), len(samples)))
        out.append(entry)
    rounded = r4_all(values, scales)
    at = 0
    for entry, key, n_medians, n_samples in spans:
        entry[key] = {"r": rounded[at : at + n_medians], "s": rounded[at + n_medians : at + n_medians + n_samples]}
        at += n_medians + n_samples
    return out


def ratios(inp: ReportInput, idx: _Index) -> dict[str, Any] | None:
    if inp.comparison is None:
        return None
    rows = [r for r in inp.comparison.rows if r.ratio is not None and r.verdict is not Verdict.ERROR]
    if not rows:
        return None
    rows.sort(key=lambda r: r.ratio or 0.0)
    # the chart's lines are a relative change: an absolute threshold (accuracy) is not one
    threshold = next((r.threshold for r in rows if r.threshold is not None and relative_threshold(r.metric)), None)
    return {
        "threshold": threshold,
        "rows": [
            [idx(r.case_id), r.metric, r4(r.ratio), r4(r.ratio_low), r4(r.ratio_high), r.verdict.value] for r in rows
        ],
    }


def roofline(inp: ReportInput, idx: _Index) -> dict[str, Any] | None:
    """Achieved FLOP/s against arithmetic intensity (FLOP per byte) for cases that declare both."""
    points: list[list[Any]] = []
    devices: dict[str, dict[str, Any]] = {}
    for side, run in (("baseline", inp.baseline), ("candidate", inp.candidate)):
        if run is None:
            continue
        for c in run.cases:
            fl = c.metric(FLOPS)
            if fl and c.flops and c.bytes:
                points.append([idx(c.id), side, c.flops / c.bytes, fl.value, fl.low, fl.high])
                devices[c.spec.device.split(":")[0]] = run.fingerprint
    if not points:
        return None
    rounded = r4_all([x for p in points for x in p[2:]])  # None (no interval) stays None
    for i, p in enumerate(points):
        p[2:] = rounded[4 * i : 4 * i + 4]
    roofs = []
    for device, fp in devices.items():
        peaks = device_peaks(fp, device)
        bw, fl = peaks.get("bandwidth_gbps"), peaks.get("flops")
        if isinstance(bw, int | float) and isinstance(fl, int | float) and bw > 0 and fl > 0:
            roofs.append({"device": device, "bw": bw * 1e9, "flops": fl})
    return {"points": points, "roofs": roofs}


def _numbers(value: Any) -> list[float | None]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, list):
        return [float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None for v in value]
    return []


def _throttled(value: Any) -> list[str]:
    """Per sample block: the active non-benign throttle reasons (empty when none)."""
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        names = item if isinstance(item, list) else [item] if item else []
        out.append(",".join(str(n) for n in names if str(n) not in _BENIGN_THROTTLE))
    return out


def _has_gpu_series(tel: dict[str, Any]) -> bool:
    nested = tel.get("gpu")
    gpu: dict[str, Any] = nested if isinstance(nested, dict) else tel
    return any(k in gpu for k in (*GPU_SERIES, "throttle", "throttle_reasons"))


def telemetry(run: RunResult | None, idx: _Index) -> dict[str, Any] | None:
    """GPU clocks, power, temperature and throttle flags per sample block, in round order across the run."""
    if run is None or not any(_has_gpu_series(r.telemetry) for c in run.cases for r in c.rounds):
        return None  # a CPU run: nothing to draw (checked first: sorting every round of a large run costs)
    blocks = sorted(
        ((r.index, pos, c.id, r.telemetry) for pos, c in enumerate(run.cases) for r in c.rounds),
        key=lambda b: (b[0], b[1]),
    )
    series: dict[str, list[float | None]] = {k: [] for k in GPU_SERIES}
    who: list[int] = []
    throttle: list[str] = []
    for _, _, cid, tel in blocks:
        nested = tel.get("gpu")
        gpu: dict[str, Any] = nested if isinstance(nested, dict) else tel
        per_key = {k: _numbers(gpu.get(k)) for k in GPU_SERIES}
        flags = _throttled(gpu.get("throttle", gpu.get("throttle_reasons")))
        n = max([len(v) for v in per_key.values()] + [len(flags) if any(flags) else 0])
        for k in GPU_SERIES:
            vals = per_key[k]
            series[k].extend(r4(vals[i]) if i < len(vals) else None for i in range(n))
        throttle.extend(flags[i] if i < len(flags) else "" for i in range(n))
        who.extend([idx(cid)] * n)
    if not who or (all(v is None for vals in series.values() for v in vals) and not any(throttle)):
        return None
    step = max(1, math.ceil(len(who) / MAX_TELEMETRY_POINTS))
    flagged = [[i, who[i], t] for i, t in enumerate(throttle) if t]
    return {
        "step": step,
        "case": who[::step],
        "series": {k: v[::step] for k, v in series.items() if any(x is not None for x in v)},
        "throttle": flagged[:: max(1, math.ceil(len(flagged) / MAX_TELEMETRY_POINTS))],
    }


def _peak(case: CaseResult | None, name: str) -> float | None:
    m = case.metric(name) if case else None
    return r4(m.value) if m else None


def memory(inp: ReportInput, idx: _Index) -> list[list[Any]] | None:
    rows = []
    for cid in _case_order(inp):
        base, cand = inp.cases(cid)
        values = [_peak(c, n) for n in (MEMORY_HOST, MEMORY_DEVICE) for c in (base, cand)]
        if any(v is not None for v in values):
            rows.append([idx(cid), *values])  # [case, host base, host cand, device base, device cand]
    return rows or None


MAX_SWEEP_CHARTS = 300  # one chart per sweep and swept parameter, picked from a list: bounded for huge suites


def _sweep_side(sweep: Sweep | None, name: str, xs: list[str], lines: dict[str, int], scale: float) -> list[Any]:
    """Per line, the [value, low, high] at each x (None where the combination was not measured or failed)."""
    grid: list[list[list[float | None] | None]] = [[None] * len(xs) for _ in lines]
    if sweep is None:
        return grid
    pos = {x: i for i, x in enumerate(xs)}
    for c in sweep.cases:
        h = sweep.value(c)
        if h is None or name not in c.spec.params:
            continue
        key = _others(c, name)
        if key in lines:
            low, high = (h.low / scale if h.low is not None else None), (h.high / scale if h.high is not None else None)
            grid[lines[key]][pos[str(c.spec.params[name])]] = [r4(h.value / scale), r4(low), r4(high)]
    return grid


def _others(case: CaseResult, name: str) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.spec.params.items() if k != name) or "all"


def _where(sweep: Sweep | None, name: str, xs: list[str], lines: dict[str, int]) -> list[int] | None:
    best = sweep.best if sweep is not None else None
    if best is None or name not in best.spec.params:
        return None
    return [lines[_others(best, name)], xs.index(str(best.spec.params[name]))]


def sweep_charts(inp: ReportInput, idx: _Index) -> list[dict[str, Any]] | None:
    """One chart per sweep (reports/sweeps.py) and swept parameter: the headline metric against the parameter, a
    line per combination of the other parameters, both sides in a comparison, and each side's best marked."""
    if inp.candidate is None:
        return None
    base_sweeps = {s.key: s for s in find_sweeps(inp.baseline)} if inp.baseline is not None else {}
    out: list[dict[str, Any]] = []
    for sweep in find_sweeps(inp.candidate):
        base = base_sweeps.get(sweep.key)
        if base is not None and (base.metric, base.batch) != (sweep.metric, sweep.batch):
            base = None
        values = [h.value for c in sweep.cases if (h := sweep.value(c)) is not None]
        unit, scale = time_unit(min(values)) if sweep.metric == LATENCY and values else (sweep.unit, 1.0)
        for name in sweep.swept:
            cases = [*sweep.cases, *(base.cases if base else ())]
            xs = [str(v) for v in swept_values(cases, name)]
            keys = dict.fromkeys(_others(c, name) for c in cases if name in c.spec.params)
            lines = {k: i for i, k in enumerate(keys)}
            best = sweep.best
            out.append({
                "w": sweep.key, "p": name, "m": sweep.metric, "u": unit, "lower": sweep.lower_is_better, "x": xs,
                "k": list(lines), "n": _sweep_side(sweep, name, xs, lines, scale),
                "b": _sweep_side(base, name, xs, lines, scale) if base is not None else None,
                "bn": _where(sweep, name, xs, lines), "bb": _where(base, name, xs, lines),
                "c": idx(best.id) if best is not None else None,
            })  # fmt: skip
            if len(out) >= MAX_SWEEP_CHARTS:
                return out
    return out or None


def chart_data(inp: ReportInput, max_samples: int = MAX_SAMPLES) -> dict[str, Any]:
    idx = _Index()
    data = {
        "dist": distributions(inp, idx, max_samples),
        "ratio": ratios(inp, idx),
        "roof": roofline(inp, idx),
        "telemetry": telemetry(inp.candidate, idx),
        "memory": memory(inp, idx),
        "sweep": sweep_charts(inp, idx),
    }
    return {"cases": idx.ids, **data}
