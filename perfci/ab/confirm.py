"""Confirmation: a stored-baseline comparison that flags cases is checked by a same-machine A/B before failing.

Across separate jobs the unpaired rule can only flag large changes and says `inconclusive` for the rest
(perfci.compare.decide). `perfci run --confirm` then re-measures only the flagged cases by `perfci ab <baseline's
commit>` against the working tree, and their rows are replaced by the paired verdicts, which decide the gate.
Rows of other cases are kept.

A case is flagged when one of its timed metrics is not settled at the practical threshold theta: `regression`,
`inconclusive`, or `unchanged`/`slower`/`faster` with an interval that still reaches past theta on the worse side
(for `unchanged` that needs a threshold other than the one it was decided at; `slower` can: an established small
slowdown whose interval still allows a regression).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from perfci.format.model import Comparison, Direction, MetricComparison, Verdict
from perfci.metrics.registry import LATENCY, default_registry

FLAGGED = (Verdict.REGRESSION, Verdict.INCONCLUSIVE)
SETTLED_IF_BOUNDED = (Verdict.UNCHANGED, Verdict.SLOWER, Verdict.FASTER)  # settled when the worse edge is inside theta


def unsettled(row: MetricComparison, theta: float, clear_regressions: bool = False) -> bool:
    """Whether `row` leaves a change of more than `theta` on the worse side possible (module docstring). With
    `clear_regressions`, a `regression` whose whole interval lies past theta counts as settled (what a note on
    unsettled cases counts; confirmation re-measures every regression all the same)."""
    if clear_regressions and row.verdict is Verdict.REGRESSION and _wholly_past(row, theta):
        return False
    if row.verdict in FLAGGED:
        return True
    if row.verdict not in SETTLED_IF_BOUNDED:
        return False
    higher = row.direction is Direction.HIGHER
    edge = row.ratio_high if not higher else (1.0 / row.ratio_low if row.ratio_low else None)  # worst change allowed
    return edge is None or edge > 1.0 + theta


def _wholly_past(row: MetricComparison, theta: float) -> bool:
    """Whether the row's interval lies wholly past +theta on the worse side."""
    best = (
        row.ratio_low if row.direction is not Direction.HIGHER else (1.0 / row.ratio_high if row.ratio_high else None)
    )
    return best is not None and best > 1.0 + theta


def flagged_cases(
    comparison: Comparison, theta_of: Callable[[str, str], float], clear_regressions: bool = False
) -> list[str]:
    """Case ids with a timed metric that is unsettled at its practical threshold `theta_of(case_id, metric)`."""
    ids = {
        r.case_id
        for r in comparison.rows
        if (d := default_registry().get(r.metric)) is not None
        and d.comparable
        and d.timed
        and unsettled(r, theta_of(r.case_id, r.metric), clear_regressions)
    }
    return sorted(ids)


def merge_confirmation(stored: Comparison, ab: Comparison, revision: str) -> Comparison:
    """`stored` with the rows of every case that `ab` measured replaced by the A/B rows (noted as such)."""
    confirmed = {r.case_id for r in ab.rows if r.verdict not in (Verdict.NEW, Verdict.MISSING)}
    note = f"confirmed by A/B against {revision}"
    rows: list[MetricComparison] = [r for r in stored.rows if r.case_id not in confirmed]
    rows += [replace(r, note=f"{r.note}; {note}" if r.note else note) for r in ab.rows if r.case_id in confirmed]
    before = {r.case_id: r.verdict for r in stored.rows if r.case_id in confirmed and r.metric == LATENCY}
    after = {r.case_id: r.verdict for r in ab.rows if r.case_id in confirmed and r.metric == LATENCY}
    changes = [f"{c}: {before[c].value} -> {after[c].value}" for c in sorted(before) if c in after]
    warning = f"{len(confirmed)} flagged case(s) re-measured by A/B against {revision}" + (
        f" ({'; '.join(changes)})" if changes else ""
    )
    settings = {**stored.settings, "confirmation": {"revision": revision, "ab": ab.settings.get("ab", {})}}
    return replace(stored, rows=tuple(rows), warnings=(*stored.warnings, warning), settings=settings)
