"""Terminal tables: the same verdicts, most urgent first, and a summary for big suites."""

from __future__ import annotations

import time

from rich.console import Console

from perfci.format.model import Comparison, MetricComparison, Verdict
from perfci.reports.terminal import SUMMARY_ABOVE, SUMMARY_OTHER_ROWS, comparison_table, verdict_line
from tests.report_fixtures import suite_comparison


def _text(table: object) -> str:
    console = Console(width=220, record=True, no_color=True)
    console.print(table)
    return console.export_text()


def _case_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "@cpu" in line]


def test_comparison_table_urgent_first_and_limited() -> None:
    _, cand, comp = suite_comparison(12)
    assert len(comp.rows) <= SUMMARY_ABOVE  # a small comparison: every row
    text = _text(comparison_table(comp, limit=5))
    lines = _case_lines(text)
    assert len(lines) == 5
    assert "regression" in lines[0] and "error" in lines[1]
    assert f"... and {len(comp.rows) - 5:,} more rows (see report.html)" in text
    assert len(_case_lines(_text(comparison_table(comp)))) == len(comp.rows)
    assert verdict_line(comp, cand).startswith("FAIL: 1 regression, 1 error, 1 inconclusive")


def test_large_comparison_lists_every_row_not_unchanged_then_counts() -> None:
    _, _, comp = suite_comparison(200)
    assert len(comp.rows) > SUMMARY_ABOVE
    text = _text(comparison_table(comp))
    lines = _case_lines(text)
    listed = [r for r in comp.rows if r.verdict is not Verdict.UNCHANGED]
    assert len(lines) == len(listed) and not any("unchanged" in line for line in lines)
    assert "regression" in lines[0]
    unchanged = len(comp.rows) - len(listed)
    assert (
        f"{len(comp.rows):,} rows: 4 regressions, 4 errors, 4 inconclusive, 4 improvements, {unchanged:,} unchanged"
        in text
    )
    flat = " ".join(text.split())  # the caption wraps where the table's width says
    assert f"not listed: the {unchanged:,} unchanged (every row" in flat and "--format json" in flat
    # with a limit too: the rows cut are counted, and so is every verdict
    limited = _text(comparison_table(comp, limit=3))
    assert len(_case_lines(limited)) == 3
    assert f"... and {len(listed) - 3:,} more rows (see report.html)" in limited
    assert f"{len(comp.rows):,} rows:" in limited


def test_summary_threshold_is_a_parameter() -> None:
    _, _, comp = suite_comparison(12)
    text = _text(comparison_table(comp, summary_above=5))
    assert len(_case_lines(text)) == sum(1 for r in comp.rows if r.verdict is not Verdict.UNCHANGED)


def test_a_20000_row_comparison_renders_quickly() -> None:
    """Unchanged rows are not rendered at all: a huge comparison with a few changes prints a few rows."""
    rows = tuple(
        MetricComparison(f"k.case[n={i}]@cpu", "latency.median", Verdict.REGRESSION if i % 1000 == 0 else
                         Verdict.UNCHANGED, "s", 1e-3, 1e-3, 1.0, 0.99, 1.01, 0.03)
        for i in range(20_000)
    )  # fmt: skip
    start = time.perf_counter()
    text = _text(comparison_table(Comparison("a", "b", rows)))
    assert time.perf_counter() - start < 5.0
    assert len(_case_lines(text)) == 20
    assert "20,000 rows: 20 regressions, 19,980 unchanged" in text


def test_many_rows_that_do_not_fail_are_capped_but_failing_ones_never() -> None:
    """5,000 inconclusive rows (an unpaired comparison of noisy cases) and 300 regressions: every regression and
    error is listed, then the first SUMMARY_OTHER_ROWS of the rest; the caption counts what is left out."""

    def row(i: int, verdict: Verdict) -> MetricComparison:
        return MetricComparison(f"k.case[n={i}]@cpu", "latency.median", verdict, "s", 1e-3, 1.1e-3, 1.1, 0.9, 1.3)

    rows = [row(i, Verdict.INCONCLUSIVE) for i in range(5000)] + [row(5000 + i, Verdict.REGRESSION) for i in range(300)]
    rows += [row(6000 + i, Verdict.ERROR) for i in range(20)] + [row(7000 + i, Verdict.UNCHANGED) for i in range(50)]
    comparison = Comparison("a", "b", tuple(rows))
    start = time.perf_counter()
    text = _text(comparison_table(comparison))
    assert time.perf_counter() - start < 5.0
    lines = _case_lines(text)
    assert len(lines) == 300 + 20 + SUMMARY_OTHER_ROWS
    assert sum("regression" in line for line in lines) == 300 and sum("error" in line for line in lines) == 20
    flat = " ".join(text.split())
    assert f"not listed: the 50 unchanged and {5000 - SUMMARY_OTHER_ROWS:,} more that do not fail the gate" in flat


def test_the_run_table_shows_each_case_own_memory() -> None:
    from rich.console import Console

    from perfci.reports.terminal import run_table
    from tests.conftest import make_case, make_run

    console = Console(width=160, record=True)
    console.print(run_table(make_run([make_case("a", 1e-3)])))
    text = console.export_text()
    assert "memory (own)" in text and "host 977 KiB" in text
