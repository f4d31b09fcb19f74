"""Cases of an A/B that run at two speeds by process (perfci/stats/modes.py): decided on their matched pairs only.

After each look, each case's pairs are split into their log ratios of the median latency (the lockstep step
ratios where the pair has them, else the ratio of its two rounds' medians). When those fall into groups far
apart, most pairs compare draws of the process's speed, not the code, and which group holds the pairs whose two
processes drew alike cannot be told from the sizes: with 8 pairs of random draws, a mismatched group is the
largest in about a fifth of A/Bs. So a timed row that named a change (`regression`, `improvement`, `slower`,
`faster`) keeps it only when every group of two or more pairs points the same way by at least half the threshold
(a change moves every group); otherwise it becomes `inconclusive`, with a note giving the groups. A test that only
draws two speeds then ends `inconclusive` or `unchanged` whatever its draws, while a slower test whose head drew
the slow layout in a few pairs stays a regression. A case in modes gets no further pairs (more draws would not
settle it): the other cases' looks go on without it.

Each clock is judged on its own pairs. A CUDA case's host rows (latency, host overhead) follow the host, whose
speed a process draws (one GPT-2 small's pairs fell at -23% and 0% on an H100 runner), while its kernels run at
the GPU's speed: its `device.time` row is capped only where its own per-pair device-time ratios fall into modes,
and such a case stops for modes only where its device clock, the clock it is decided on, is in modes. (Before,
the latency's modes made that GPT-2's +0.7% kernel change `inconclusive` and stopped its pairs.)
"""

from __future__ import annotations

import math
from dataclasses import replace
from statistics import median
from typing import Literal

from perfci.compare.decide import step_pairs
from perfci.format.model import CaseResult, Comparison, Direction, MetricComparison, RunResult, Verdict
from perfci.metrics.registry import DEVICE_TIME, metric_def, round_values
from perfci.stats.modes import Modes, split_modes

CHANGES = (Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.SLOWER, Verdict.FASTER)


def pair_log_ratios(base: CaseResult, head: CaseResult) -> list[float]:
    """Per pair, log(head / base) of the median latency: its lockstep step ratio, else its rounds' medians."""
    steps = step_pairs(base, head)
    head_rounds = {r.index: r for r in head.rounds}
    out = []
    for a in base.rounds:
        b = head_rounds.get(a.index)
        if b is None:
            continue
        if a.index in steps:
            out.append(steps[a.index])
        elif a.per_call and b.per_call and min(a.per_call) > 0 and min(b.per_call) > 0:
            out.append(math.log(median(b.per_call)) - math.log(median(a.per_call)))
    return out


def device_log_ratios(base: CaseResult, head: CaseResult) -> list[float]:
    """Per pair (rounds of the same index), log(head / base) of the round's device time, where both have one."""
    device = metric_def(DEVICE_TIME)
    a, b = round_values(base, device), round_values(head, device)
    return [math.log(b[i]) - math.log(a[i]) for i in sorted(set(a) & set(b))]


def case_modes(base: RunResult, head: RunResult, clock: Literal["host", "device"] = "host") -> dict[str, Modes]:
    """Case id -> the groups its pairs fell into, for the cases measured on both sides whose pairs are in modes on
    `clock`: "host" (the median latency's ratios, `pair_log_ratios`) or "device" (`device_log_ratios`)."""
    ratios = device_log_ratios if clock == "device" else pair_log_ratios
    heads = {c.id: c for c in head.cases}
    found = {}
    for a in base.cases:
        b = heads.get(a.id)
        if b is not None and a.rounds and b.rounds and (modes := split_modes(ratios(a, b))) is not None:
            found[a.id] = modes
    return found


def _note(modes: Modes) -> str:
    groups = ", ".join(f"{math.expm1(c):+.0%} ({n})" for c, n in zip(modes.centres, modes.sizes, strict=True))
    return (
        f"two speeds by process: its pairs fell into groups at {groups} (pairs per group), a layout or state "
        "its processes draw; the pairs that drew alike do not show a change"
    )


def agreeing_groups(modes: Modes) -> tuple[float, ...]:
    """The centres a change must show in: every group of two or more pairs (a lone pair is an outlier, the
    trimmed estimate's job), or all of them where none has two."""
    held = tuple(c for c, n in zip(modes.centres, modes.sizes, strict=True) if n >= 2)
    return held or modes.centres


def _capped(row: MetricComparison, modes: Modes) -> MetricComparison:
    if not metric_def(row.metric).timed:
        return row
    if row.verdict is Verdict.INCONCLUSIVE and not row.note:  # say why more pairs were not taken
        return replace(row, note=_note(modes))
    if row.verdict not in CHANGES:
        return row
    need = 0.5 * math.log1p(row.threshold if row.threshold is not None else 0.0)
    sign = -1.0 if row.direction is Direction.HIGHER else 1.0
    sign = sign if row.verdict in (Verdict.REGRESSION, Verdict.SLOWER) else -sign
    if all(sign * c >= need and sign * c > 0 for c in agreeing_groups(modes)):
        return row
    return replace(row, verdict=Verdict.INCONCLUSIVE, note=_note(modes))


def cap_process_modes(comparison: Comparison, base: RunResult, head: RunResult) -> tuple[Comparison, set[str]]:
    """The comparison with the timed changes of cases in modes made `inconclusive`, each row judged on its own
    clock's pairs (module docstring), and the ids of the cases in modes on the clock they are decided on."""
    host = case_modes(base, head)
    with_device = {r.case_id for r in comparison.rows if r.metric == DEVICE_TIME and r.ratio is not None}
    device = case_modes(base, head, "device") if with_device else {}
    if not host and not device:
        return comparison, set()

    def modes_of(row: MetricComparison) -> Modes | None:
        return (device if row.metric == DEVICE_TIME else host).get(row.case_id)

    rows = tuple(_capped(r, m) if (m := modes_of(r)) is not None else r for r in comparison.rows)
    moded = {c for c in device if c in with_device} | {c for c in host if c not in with_device}
    return replace(comparison, rows=rows), moded
