"""Markdown summary: verdict line, short table, escaping, and the size bound for any suite size."""

from __future__ import annotations

import re

from perfci.format.model import CaseError, CaseResult, CaseStatus, Comparison, MetricComparison, Verdict
from perfci.reports.markdown import code, render_markdown
from tests.conftest import make_case, make_run
from tests.formats import with_spec
from tests.report_fixtures import suite_comparison

GITHUB_COMMENT_LIMIT = 65_536  # characters GitHub accepts in a comment
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
    assert len(cells(row)) == 8
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
    bad = type(bad).of(bad.spec, CaseStatus.ERROR, (), (), (CaseError("timeout", "no result after 120 s"),))
    md = render_markdown(make_run([ok, bad]), None)
    assert "measured 1 case(s), 1 error(s); no baseline" in md
    assert "`t.broken[n=8]@cpu`" in md and "`timeout`" in md
    # skipped cases are not counted as measured (4 of 6 skipped read "measured 6 case(s)")
    gone = type(ok).of(make_case("gone", 1e-3).spec, CaseStatus.SKIPPED, (), (), (CaseError("skipped", "fixed"),))
    assert "measured 1 case(s), 1 error(s), 1 skipped; no baseline" in render_markdown(make_run([ok, bad, gone]), None)


def test_run_summary_lists_each_case_with_median_interval_and_memory() -> None:
    from dataclasses import replace

    from perfci.metrics.derive import metric
    from perfci.metrics.registry import MEMORY_DEVICE, MEMORY_HOST

    def without_memory(case: CaseResult) -> CaseResult:
        return replace(case, metrics=tuple(m for m in case.metrics if m.name not in (MEMORY_HOST, MEMORY_DEVICE)))

    plain = without_memory(make_case("plain", 1e-3))
    gpu = without_memory(make_case("gpu", 2e-6))
    gpu = replace(gpu, metrics=(*gpu.metrics, metric(MEMORY_HOST, 3 * 2**20), metric(MEMORY_DEVICE, 2**30)))
    md = render_markdown(make_run([plain, gpu]), None)
    head = next(line for line in md.splitlines() if line.startswith("| case"))
    assert cells(head) == ["case", "median", "interval", "memory (host)", "memory (device)"]
    row = cells(next(line for line in md.splitlines() if "t.gpu[n=8]@cpu" in line))
    assert row[0] == "`t.gpu[n=8]@cpu`" and row[1].endswith("µs") and " .. " in row[2]
    assert row[3] == "3 MiB" and row[4] == "1 GiB"
    assert cells(next(line for line in md.splitlines() if "t.plain" in line))[3:] == ["-", "-"]


def test_run_summary_rows_are_escaped_and_bounded() -> None:

    from perfci.format.model import CaseSpec

    evil = "a|b`c<img src=x>@octocat"
    cases = [make_case(f"c{i}", 1e-3) for i in range(300)]
    cases[0] = with_spec(cases[0], CaseSpec(workload=evil + "x" * 5000, params={}, device="cpu"))
    md = render_markdown(make_run(cases), None, max_rows=50)
    rows = [line for line in md.splitlines() if line.startswith("| `")]
    assert len(rows) == 50 and all(len(cells(r)) == 5 for r in rows)
    assert rows[0].startswith("| ``") and "a\\|b`c<img" in rows[0] and len(rows[0]) < 400
    assert "… and 250 more measured cases (see report.html)" in md
    big = render_markdown(make_run([make_case(f"c{i}", 1e-3) for i in range(5000)]), None, max_rows=10_000)
    assert len(big) < GITHUB_COMMENT_LIMIT and "more measured cases" in big


def test_a_regressions_note_is_in_the_summary_too() -> None:
    """The step summary (and PR comment) dropped the notes of regression and missing rows: "beyond the declared
    expected change of 50%", "confirmed by A/B", what lets a missing case pass."""
    beyond = MetricComparison("w.a@cpu", "latency.median", Verdict.REGRESSION, "s", 1e-3, 2e-3, 2.0, 1.9, 2.1, 0.03,
                              note="beyond the declared expected change of 50%")  # fmt: skip
    why = "not in the candidate (--allow-missing, or a declared removal, lets it pass)"
    gone = MetricComparison("w.b@cpu", "latency.median", Verdict.MISSING, "s", 1e-3, None, note=why)
    md = render_markdown(None, Comparison("main", "pr", (beyond, gone)))
    assert "regression `beyond the declared expected change of 50%`" in md
    assert "missing `not in the candidate (--allow-missing" in md


def test_only_the_rows_shown_are_formatted(monkeypatch) -> None:
    """A 5,000-case comparison lists a few dozen rows: the rest are counted, never formatted (0.2 s of a compare)."""
    import perfci.reports.markdown as md

    made: list[str] = []
    real = md._row
    monkeypatch.setattr(md, "_row", lambda r: made.append(r.case_id) or real(r))
    text = md.render_markdown(None, synthetic(5000))
    shown = [line for line in text.splitlines() if line.startswith("| ") and "models.m" in line]
    assert shown and len(made) <= len(shown) + 1  # the one row that did not fit the budget is made, then dropped
    assert "more cases" in text
