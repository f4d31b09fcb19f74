"""Confirmation: a stored-baseline comparison that flags cases is checked by a same-machine A/B before failing.

Across separate jobs the unpaired rule can only flag large changes and says `inconclusive` for the rest
(perfci.compare.decide). `perfci run --confirm` then re-measures only the flagged cases (a timed metric that is
`regression` or `inconclusive`) by `perfci ab <baseline's commit>` against the working tree, and their rows are
replaced by the paired verdicts, which decide the gate. Rows of other cases are kept.
"""

from __future__ import annotations

from dataclasses import replace

from perfci.compare.policy import METRICS, metric_def
from perfci.model import Comparison, MetricComparison, Verdict

FLAGGED = (Verdict.REGRESSION, Verdict.INCONCLUSIVE)


def flagged_cases(comparison: Comparison) -> list[str]:
    """Case ids with a timed metric that is `regression` or `inconclusive`."""
    ids = {
        r.case_id
        for r in comparison.rows
        if r.verdict in FLAGGED and r.metric in METRICS and metric_def(r.metric).timed
    }
    return sorted(ids)


def merge_confirmation(stored: Comparison, ab: Comparison, revision: str) -> Comparison:
    """`stored` with the rows of every case that `ab` measured replaced by the A/B rows (noted as such)."""
    confirmed = {r.case_id for r in ab.rows if r.verdict not in (Verdict.NEW, Verdict.MISSING)}
    note = f"confirmed by A/B against {revision}"
    rows: list[MetricComparison] = [r for r in stored.rows if r.case_id not in confirmed]
    rows += [replace(r, note=f"{r.note}; {note}" if r.note else note) for r in ab.rows if r.case_id in confirmed]
    before = {r.case_id: r.verdict for r in stored.rows if r.case_id in confirmed and r.metric == "latency.median"}
    after = {r.case_id: r.verdict for r in ab.rows if r.case_id in confirmed and r.metric == "latency.median"}
    changes = [f"{c}: {before[c].value} -> {after[c].value}" for c in sorted(before) if c in after]
    warning = f"{len(confirmed)} flagged case(s) re-measured by A/B against {revision}" + (
        f" ({'; '.join(changes)})" if changes else ""
    )
    settings = {**stored.settings, "confirmation": {"revision": revision, "ab": ab.settings.get("ab", {})}}
    return replace(stored, rows=tuple(rows), warnings=(*stored.warnings, warning), settings=settings)
