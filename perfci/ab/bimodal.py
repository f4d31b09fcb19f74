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
"""

from __future__ import annotations

import math
from dataclasses import replace
from statistics import median

from perfci.compare.decide import step_pairs
from perfci.format.model import CaseResult, Comparison, Direction, MetricComparison, RunResult, Verdict
from perfci.metrics.registry import metric_def
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


def case_modes(base: RunResult, head: RunResult) -> dict[str, Modes]:
    """Case id -> the groups its pairs fell into, for the cases measured on both sides whose pairs are in modes."""
    heads = {c.id: c for c in head.cases}
    found = {}
    for a in base.cases:
        b = heads.get(a.id)
        if b is not None and a.rounds and b.rounds and (modes := split_modes(pair_log_ratios(a, b))) is not None:
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
    """The comparison with the timed changes of cases in modes made `inconclusive`, and those cases' ids."""
    found = case_modes(base, head)
    if not found:
        return comparison, set()
    rows = tuple(_capped(r, found[r.case_id]) if r.case_id in found else r for r in comparison.rows)
    return replace(comparison, rows=rows), set(found)
