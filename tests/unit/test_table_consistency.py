"""Issue 15: every comparison table agrees with itself: candidate / baseline - 1 is the change shown, also
where the paired estimate trims pairs (the columns show the pairs it kept)."""

from __future__ import annotations

import math
import re
from dataclasses import replace

from rich.console import Console

from perfci.compare.decide import compare_runs
from perfci.compare.policy import DecisionSettings
from perfci.format.model import CaseResult
from perfci.reports.case_rows import ReportInput, comparison_rows
from perfci.reports.markdown import render_markdown
from perfci.reports.terminal import comparison_table
from tests.conftest import make_case, make_run


def _skewed(case: CaseResult, factors: list[float]) -> CaseResult:
    """Scale each round's samples: one wild pair that trimming drops, as in a GPU A/A seen on the H200."""
    rounds = tuple(
        replace(r, samples=tuple(s * f for s in r.samples)) for r, f in zip(case.rounds, factors, strict=True)
    )
    return replace(case, rounds=rounds)


def test_candidate_over_baseline_is_the_change_in_every_row_and_rendering() -> None:
    base = make_case("k", 180e-6, rounds=10)
    cand = _skewed(make_case("k", 180e-6, rounds=10, seed=1), [1.0] * 7 + [1.65, 1.7, 1.6])
    comparison = compare_runs(make_run([base]), make_run([cand]), DecisionSettings(), paired=True)
    row = next(r for r in comparison.rows if r.metric == "latency.median")
    assert row.baseline and row.candidate and row.ratio
    assert math.isclose(row.candidate / row.baseline, row.ratio, rel_tol=1e-12)
    console = Console(width=250, record=True)
    console.print(comparison_table(comparison))
    html = next(r for r in comparison_rows(ReportInput(None, comparison)) if r.metric == "latency.median")
    html_line = f"{html.case} {html.change}"
    for text in (console.export_text(), render_markdown(None, comparison), html_line):
        line = next(x for x in text.splitlines() if "t.k" in x)
        change = re.search(r"([+-]\d+\.\d+)%", line)
        assert change is not None, line
        assert abs(float(change.group(1)) - (row.ratio - 1) * 100) < 0.05 + 1e-9, line
