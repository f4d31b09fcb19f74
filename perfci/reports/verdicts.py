"""Verdict ordering, counts, the one-line headline and the sensitivity line shared by every report format."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from perfci.format.model import CaseStatus, Comparison, MetricComparison, RunResult, Verdict
from perfci.reports.clocks import deciding_rows, device_cases

# Most urgent first: this is the default order of every table of verdicts.
VERDICT_ORDER: tuple[Verdict, ...] = (
    Verdict.REGRESSION,
    Verdict.ERROR,
    Verdict.INCONCLUSIVE,
    Verdict.MISSING,
    Verdict.SLOWER,
    Verdict.GREW,
    Verdict.NEW,
    Verdict.IMPROVEMENT,
    Verdict.FASTER,
    Verdict.SHRANK,
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
        skipped = sum(1 for c in run.cases if c.status is CaseStatus.SKIPPED) if run else 0
        ok = len(run.cases) - len(errors) - skipped if run else 0
        left = f", {skipped} skipped" if skipped else ""  # 4 of 6 skipped read as "measured 6 case(s)"
        return f"measured {ok} case(s), {len(errors)} error(s){left}; no baseline to compare with"
    counts = verdict_counts(comparison)
    expected = sum(1 for r in comparison.rows if r.verdict is Verdict.REGRESSION and expected_reason(r))
    if comparison.failing:  # regressions not expected; `slower` and `grew` rows too with fail_on = "slower"
        head = "FAIL"
    elif counts[Verdict.ERROR] or errors:
        head = "ERROR"
    else:
        head = "PASS"
    parts = [count_phrase(n, v) for v, n in counts.items() if n]
    if expected:
        parts[0] += f" ({expected:,} expected)"
    cases = len({r.case_id for r in comparison.rows})
    # the counts are of rows (a case has a row per metric): said where that differs from the cases, so that "5
    # unchanged" of a 4-test file is not read as five tests
    rows = len(comparison.rows)
    of = f" ({rows:,} rows of {cases:,} case{'s' if cases != 1 else ''})" if cases != rows else ""
    return f"{head}: " + (", ".join(parts) + of if parts else "nothing compared")


def format_mdc(mdc: float | None) -> str:
    """A minimum detectable change as text ("1.1%"); "-" for a row without one."""
    if mdc is None or not math.isfinite(mdc):
        return "-"
    if mdc > MDC_SHOWN:  # "10250779625%" (two rounds of a noisy case) says only that nothing practical is seen
        return f">{MDC_SHOWN + 1:.0f}x"
    return f"{mdc * 100:.2g}%" if mdc < 0.1 else f"{mdc * 100:.0f}%"


MDC_SHOWN = 9.0  # a minimum detectable change past +900% (tenfold) is shown as ">10x"


@dataclass(frozen=True)
class Sensitivity:
    """What a comparison could detect: changes of `mdc` or more (80% power) in `covered` of its `timed` rows."""

    mdc: float
    covered: int
    timed: int
    paired: bool
    least: MetricComparison  # the row with the largest minimum detectable change
    by_device: int = 0  # CUDA cases counted by their device time alone (reports/clocks.deciding_rows)

    def sentence(self) -> str:
        what = "this A/B" if self.paired else "this comparison"
        rows = "case" if self.timed == 1 else "cases"
        n = f"{self.covered:,} of {self.timed:,} {rows}"
        device = (
            f" (device time for {self.by_device:,} CUDA case(s); their host rows follow the host and are not "
            "decided by an A/B)"
            if self.by_device
            else ""
        )
        if self.mdc > MDC_SHOWN:  # the quoted row (the 90th percentile) sees nothing: say so, not "in 2 of 2"
            return (
                f"{what} could detect no change smaller than tenfold in "
                f"{'its case' if self.timed == 1 else f'at least one of its {self.timed:,} cases'}"
                f"{device}: too few rounds, or too much noise, to see a practical change"
            )
        return f"{what} could detect changes of {format_mdc(self.mdc)} or more in {n}{device}"


SENSITIVITY_SHARE = 0.9  # the sentence quotes the minimum detectable change that this share of timed rows reach


def sensitivity(comparison: Comparison) -> Sensitivity | None:
    """The minimum detectable change that 90% of the timed rows (those with one) reach, or None without any.
    By default a case has one timed row (latency), so the sentence says "cases"."""
    rows = [r for r in deciding_rows(comparison) if r.mdc is not None and math.isfinite(r.mdc)]
    if not rows:
        return None
    by_device = len({r.case_id for r in rows if r.case_id in device_cases(comparison)})
    ordered = sorted(rows, key=lambda r: r.mdc or 0.0)
    covered = max(1, math.ceil(SENSITIVITY_SHARE * len(ordered)))
    mdc = ordered[covered - 1].mdc or 0.0
    covered = sum(1 for r in ordered if (r.mdc or 0.0) <= mdc)
    ids = [getattr(comparison, side, {}).get("run_id") for side in ("baseline_run", "candidate_run")]
    an_ab = comparison.mode == "paired" and not (ids[0] and ids[0] == ids[1])  # not a file with itself
    return Sensitivity(mdc, covered, len(ordered), an_ab, ordered[-1], by_device)
