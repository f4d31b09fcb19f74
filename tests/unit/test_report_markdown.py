"""Markdown summary: verdict line, short table, escaping, and the size bound for any suite size."""

from __future__ import annotations

import re

from perfci.model import CaseError, CaseStatus, Comparison, MetricComparison, Verdict
from perfci.reports.markdown import GITHUB_COMMENT_LIMIT, code, render_markdown
from tests.conftest import make_case, make_run
from tests.report_fixtures import suite_comparison

CYCLE = (Verdict.REGRESSION, Verdict.INCONCLUSIVE, Verdict.UNCHANGED, Verdict.UNCHANGED, Verdict.ERROR)


def synthetic(n: int, name_len: int = 40) -> Comparison:
    rows = []
    for i in range(n):
        verdict = CYCLE[i % len(CYCLE)]
        name = f"models.m{i}[" + "x" * name_len + "]@cuda"
        ratio = None if verdict is Verdict.ERROR else 1.0 + (i % 17) / 100
        rows.append(
            MetricComparison(
                name, "latency.median", verdict, "s", 1e-3, 1.1e-3, ratio, ratio and ratio - 0.02,
                ratio and ratio + 0.02, 0.05, "worker died | exit -9" if verdict is Verdict.ERROR else "",
            )
        )  # fmt: skip
    return Comparison("main", "pr", tuple(rows))


def cells(line: str) -> list[str]:
    """Split a GFM table row on unescaped pipes."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def test_5000_cases_stay_under_the_limit_with_a_truncation_count() -> None:
    comp = synthetic(5000)
    md = render_markdown(None, comp)
    assert len(md) < 65_000
    listed = sum(1 for r in comp.rows if r.verdict in (Verdict.REGRESSION, Verdict.INCONCLUSIVE, Verdict.ERROR))
    shown = sum(1 for line in md.splitlines() if line.startswith("| regression") or line.startswith("| inconcl")
                or line.startswith("| error"))  # fmt: skip
    assert f"… and {listed - shown:,} more cases (see report.html)" in md
    assert md.startswith("### perfci: FAIL: 1,000 regressions, 1,000 errors, 1,000 inconclusive, 2,000 unchanged")


def test_huge_names_and_many_rows_still_fit_the_budget() -> None:
    md = render_markdown(None, synthetic(5000, name_len=5000), max_rows=10_000)
    assert len(md) < GITHUB_COMMENT_LIMIT - 5000
    assert "more cases (see report.html)" in md


def test_regressions_first_and_unchanged_left_out() -> None:
    base, cand, comp = suite_comparison(60)
    md = render_markdown(cand, comp, base)
    rows = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith(("| verdict", "| ---"))]
    verdicts = [cells(r)[0].split()[0] for r in rows]
    assert verdicts[0] == "regression" and "unchanged" not in verdicts and "improvement" not in verdicts
    assert "`report.html`" in md and "improvement(s)" in md
    assert "fingerprint mismatch" in md


def test_case_names_cannot_break_the_table_or_inject_markup() -> None:
    evil = "a|b`c<img src=x onerror=alert(1)>@octocat **bold** [link](http://x)"
    comp = Comparison("main", "pr", (MetricComparison(evil, "latency.median", Verdict.REGRESSION, "s", 1.0, 2.0, 2.0),))
    md = render_markdown(None, comp)
    row = next(line for line in md.splitlines() if line.startswith("| regression"))
    assert len(cells(row)) == 7
    span = cells(row)[1]
    assert span.startswith("``") and span.endswith("``")  # a code span: no markup, no mention, no link
    assert "a\\|b`c<img" in span


def test_code_span() -> None:
    assert code("plain") == "`plain`"
    assert code("x`y") == "`` x`y ``"
    assert code("a|b") == "`a\\|b`"
    assert code("line\nbreak") == "`line break`"
    assert code("z" * 500, 10) == "`" + "z" * 9 + "…`"


def test_run_only_summary_lists_errors() -> None:
    ok = make_case("fine", 1e-3)
    bad = make_case("broken", 1e-3)
    bad = type(bad)(bad.spec, CaseStatus.ERROR, (), (), (CaseError("timeout", "no result after 120 s"),))
    md = render_markdown(make_run([ok, bad]), None)
    assert "measured 1 case(s), 1 error(s)" in md
    assert "`t.broken[n=8]@cpu`" in md and "`timeout`" in md
