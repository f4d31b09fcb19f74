"""Memory rows get words as latency rows do: a certain change below the practical threshold is `grew` or
`shrank` (not `unchanged`, not `inconclusive`), `--fail-on slower` gates on `grew`, and every report names them."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from perfci.compare.decide import compare_runs
from perfci.compare.gate import ExitCode, gate
from perfci.compare.policy import DecisionSettings
from perfci.format.comparison import dump_comparison
from perfci.format.model import CaseResult, Comparison, MetricComparison, Verdict
from perfci.reports.html import render_html
from perfci.reports.junit import render_junit
from perfci.reports.markdown import render_markdown
from perfci.reports.terminal import comparison_table
from perfci.reports.verdicts import headline
from tests.conftest import make_case, make_run
from tests.formats import load_comparison

MIB = 2**20
STEADY = DecisionSettings(job_noise=0.01)


def _own_memory(case: CaseResult, nbytes: float) -> CaseResult:
    """The case with its own host memory set to `nbytes` in every round (memory is nearly deterministic)."""
    return replace(
        case, rounds=tuple(replace(r, telemetry={**r.telemetry, "memory_host_bytes": nbytes}) for r in case.rounds)
    )


def _memory_row(
    before: float, after: float, settings: DecisionSettings = STEADY
) -> tuple[Comparison, MetricComparison]:
    case = make_case("m", 1e-3)
    comparison = compare_runs(make_run([_own_memory(case, before)]), make_run([_own_memory(case, after)]), settings)
    return comparison, next(r for r in comparison.rows if r.metric == "memory.host")


def test_a_certain_three_percent_growth_is_named() -> None:
    """100 MiB to 103 MiB in every round: a regression at the default 1%; with a 5% threshold, `grew`."""
    _, row = _memory_row(100 * MIB, 103 * MIB)
    assert row.verdict is Verdict.REGRESSION
    loose = replace(STEADY, thresholds={"*": {"memory": 0.05}})
    _, row = _memory_row(100 * MIB, 103 * MIB, loose)
    assert row.verdict is Verdict.GREW and row.method == "tolerance" and row.threshold == 0.05
    _, row = _memory_row(100 * MIB, 97 * MIB, loose)
    assert row.verdict is Verdict.SHRANK


def test_within_the_floor_is_unchanged() -> None:
    """Below the 1 MiB floor (the rounds' own spread, docs/measurement.md) a change is not called."""
    _, row = _memory_row(100 * MIB, 100.5 * MIB)
    assert row.verdict is Verdict.UNCHANGED
    _, row = _memory_row(4096, 4096 + MIB // 2)
    assert row.verdict is Verdict.UNCHANGED


def test_overlapping_rounds_are_not_named() -> None:
    case = make_case("m", 1e-3)
    wobbly = replace(case, rounds=tuple(
        replace(r, telemetry={**r.telemetry, "memory_host_bytes": (100 + 3 * (r.index % 2)) * MIB}) for r in case.rounds
    ))  # fmt: skip
    comparison = compare_runs(make_run([wobbly]), make_run([_own_memory(case, 102 * MIB)]), STEADY)
    row = next(r for r in comparison.rows if r.metric == "memory.host")
    assert row.verdict not in (Verdict.GREW, Verdict.SHRANK)


def test_fail_on_slower_gates_on_grew() -> None:
    loose = replace(STEADY, thresholds={"*": {"memory": 0.05}})
    comparison, _ = _memory_row(100 * MIB, 103 * MIB, loose)
    assert gate(comparison, None) == ExitCode.OK
    gating, row = _memory_row(100 * MIB, 103 * MIB, replace(loose, fail_on="slower"))
    assert row.verdict is Verdict.GREW and row in gating.failing
    assert gate(gating, None) == ExitCode.REGRESSION
    assert headline(gating).startswith("FAIL") and "1 grew" in headline(gating)


def test_the_reports_say_grew_and_shrank(tmp_path: Path) -> None:
    loose = replace(STEADY, thresholds={"*": {"memory": 0.05}}, fail_on="slower")
    grew, _ = _memory_row(100 * MIB, 103 * MIB, loose)
    shrank, _ = _memory_row(100 * MIB, 97 * MIB, loose)
    markdown = render_markdown(None, grew)
    assert "certain memory growth" in markdown and "grew" in markdown and "fail this gate" in markdown
    assert "smaller in memory below the threshold" in render_markdown(None, shrank)
    assert 'type="grew"' in render_junit(grew)
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(comparison_table(grew))
    assert "grew" in console.export_text()
    assert "shrank" in render_html(None, shrank)
    dump_comparison(grew, tmp_path / "comparison.json")  # the file validates against the published schema
    assert any(r.verdict is Verdict.GREW for r in load_comparison(tmp_path / "comparison.json").rows)
