"""Verdict ordering, counts and the one-line headline shared by every report format."""

from __future__ import annotations

from collections.abc import Iterable

from perfci.model import CaseStatus, Comparison, MetricComparison, RunResult, Verdict

# Most urgent first: this is the default order of every table of verdicts.
VERDICT_ORDER: tuple[Verdict, ...] = (
    Verdict.REGRESSION,
    Verdict.ERROR,
    Verdict.INCONCLUSIVE,
    Verdict.MISSING,
    Verdict.NEW,
    Verdict.IMPROVEMENT,
    Verdict.UNCHANGED,
)

_PLURAL = {Verdict.REGRESSION: "regressions", Verdict.ERROR: "errors", Verdict.IMPROVEMENT: "improvements"}


def verdict_rank(verdict: Verdict) -> int:
    return VERDICT_ORDER.index(verdict)


def expected_reason(row: MetricComparison) -> str:
    """The declared expected change covering this row (a field the compare layer may set), or ''."""
    return str(getattr(row, "expected", "") or "")


def sort_rows(rows: Iterable[MetricComparison]) -> list[MetricComparison]:
    """Most urgent verdict first; within a verdict, the largest change first, then by case id."""

    def key(r: MetricComparison) -> tuple[int, bool, float, str]:
        change = abs(r.ratio - 1.0) if r.ratio is not None else -1.0
        return (verdict_rank(r.verdict), bool(expected_reason(r)), -change, r.case_id)

    return sorted(rows, key=key)


def verdict_counts(comparison: Comparison) -> dict[Verdict, int]:
    counts = dict.fromkeys(VERDICT_ORDER, 0)
    for r in comparison.rows:
        counts[r.verdict] += 1
    return counts


def count_phrase(n: int, verdict: Verdict) -> str:
    word = _PLURAL.get(verdict, verdict.value) if n != 1 else verdict.value
    return f"{n:,} {word}"


def headline(comparison: Comparison | None, run: RunResult | None = None) -> str:
    """One line: `FAIL: 2 regressions, 1 inconclusive, 40 unchanged` / `PASS: ...` / `ERROR: ...`."""
    errors = [c for c in run.cases if c.status is CaseStatus.ERROR] if run else []
    if comparison is None:
        ok = len(run.cases) - len(errors) if run else 0
        return f"measured {ok} case(s), {len(errors)} error(s); no baseline to compare with"
    counts = verdict_counts(comparison)
    expected = sum(1 for r in comparison.rows if r.verdict is Verdict.REGRESSION and expected_reason(r))
    if counts[Verdict.REGRESSION] > expected:
        head = "FAIL"
    elif counts[Verdict.ERROR] or errors:
        head = "ERROR"
    else:
        head = "PASS"
    parts = [count_phrase(n, v) for v, n in counts.items() if n]
    if expected:
        parts[0] += f" ({expected:,} expected)"
    return f"{head}: " + (", ".join(parts) if parts else "nothing compared")
