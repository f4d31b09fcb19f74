"""Accuracy as metrics: a variant's check against its reference (workloads/checks.check_against) becomes the
`accuracy.*` metrics with their tolerances, gated with an absolute threshold (a tenth of the tolerance), shown
in run tables with the tolerance, and stored in history."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from perfci.compare.decide import compare_runs
from perfci.compare.policy import DecisionSettings
from perfci.format.model import CaseResult, CaseSpec, CaseStatus, Direction, Round, RunResult, Verdict
from perfci.metrics import case_metrics
from perfci.metrics.registry import (
    ACCURACY,
    ACCURACY_MAX_ABS,
    ACCURACY_REL_L2,
    ACCURACY_TOP1,
    DEFAULT_COMPARED,
    default_registry,
    tolerance_of,
)
from perfci.reports.case_rows import ReportInput
from perfci.reports.html import render_report
from perfci.reports.junit import render_junit
from perfci.reports.markdown import render_markdown
from perfci.reports.terminal import run_table
from perfci.store.history import HistoryStore, prepare_run
from perfci.store.trend import trends
from perfci.workloads.checks import Tolerance, check_against, compare_outputs, tolerance_bounds
from tests.conftest import make_run


@dataclass
class FakeContext:
    notes: dict[str, Any] = field(default_factory=dict)
    checks: list[Any] = field(default_factory=list)

    def check_close(self, produce: Any, expected: Any, tolerance: Tolerance, what: str = "output") -> None:
        self.checks.append((produce, expected, tolerance, what))


def checked_notes(actual: list[Any], reference: list[Any], tolerance: Tolerance) -> dict[str, Any]:
    ctx = FakeContext()
    check_against(ctx, actual, reference, tolerance, "eager fp32", what="bf16 output vs eager")
    assert len(ctx.checks) == 1  # the check still runs (beyond the tolerance the case fails, exit 3)
    return ctx.notes


def accuracy_case(rel_l2: float, tolerance: float = 0.05, name: str = "bf16", rounds: int = 3) -> CaseResult:
    """A case whose rounds' set-up recorded `rel_l2` against its reference (the same in every round: seeded)."""
    notes = {
        "accuracy": {"reference": "eager fp32", "rel_l2": rel_l2, "max_abs_diff": rel_l2 * 10, "max_rel_diff": 0.1},
        "tolerances": {ACCURACY_REL_L2: tolerance, ACCURACY_MAX_ABS: tolerance * 100},
    }
    rs = tuple(
        Round(index=i, pid=10 + i, iterations=10, samples=(0.01, 0.0101, 0.0099), warmup_s=0.0, stop_reason="budget",
              threads=1, telemetry={"notes": notes})
        for i in range(rounds)
    )  # fmt: skip
    spec = CaseSpec(workload="models.mlp", params={"variant": name, "batch": 4}, device="cpu", source="tests")
    return CaseResult.of(spec, CaseStatus.OK, rs, case_metrics(rs, None, None), ())


def accuracy_rows(base: RunResult, cand: RunResult) -> dict[str, Verdict]:
    comparison = compare_runs(base, cand, DecisionSettings())
    return {r.metric: r.verdict for r in comparison.rows if r.metric in ACCURACY}


def test_the_check_records_each_figure_and_the_bounds_its_tolerance_puts_on_them() -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(8, 10))
    noisy = logits + rng.normal(scale=0.01, size=logits.shape)
    notes = checked_notes([noisy], [logits], Tolerance(max_rel_l2=0.05))
    acc = notes["accuracy"]
    assert acc["reference"] == "eager fp32" and acc["tolerance"]["max_rel_l2"] == 0.05
    assert 0 < acc["rel_l2"] < 0.05 and acc["top1_agree"] == pytest.approx(np.mean(noisy.argmax(1) == logits.argmax(1)))
    assert notes["tolerances"] == {
        ACCURACY_REL_L2: 0.05, ACCURACY_MAX_ABS: pytest.approx(0.05 * np.linalg.norm(logits))
    }  # fmt: skip
    # an element-wise rule: its largest |a - e|, and the relative L2 error it implies
    e = np.array([1.0, -2.0, 4.0])
    l2, worst = tolerance_bounds(Tolerance(rtol=1e-3, atol=1e-4), e)
    assert worst == pytest.approx(1e-4 + 4e-3)
    assert l2 == pytest.approx(np.linalg.norm(1e-4 + 1e-3 * np.abs(e)) / np.linalg.norm(e))
    # hidden states (3-d) or several outputs are not logits: no top-1 agreement
    assert compare_outputs([np.zeros((2, 3, 4))], [np.ones((2, 3, 4))]).top1_agree is None
    assert compare_outputs([logits, logits], [logits, logits]).top1_agree is None


def test_a_checked_case_has_the_accuracy_metrics_with_their_tolerances() -> None:
    case = accuracy_case(0.012)
    rel, worst = case.metric(ACCURACY_REL_L2), case.metric(ACCURACY_MAX_ABS)
    assert rel is not None and worst is not None and case.metric(ACCURACY_TOP1) is None
    assert (rel.value, rel.low, rel.high, rel.direction) == (0.012, 0.012, 0.012, Direction.LOWER)
    assert worst.value == pytest.approx(0.12)
    assert tolerance_of(case, ACCURACY_REL_L2) == 0.05 and tolerance_of(case, ACCURACY_MAX_ABS) == 5.0
    assert all(name in DEFAULT_COMPARED for name in ACCURACY)  # gated by default, like latency
    # the reference variant checked against itself: an error of exactly 0 is a value
    plain = accuracy_case(0.0)
    assert plain.metric(ACCURACY_REL_L2) is not None and plain.metric(ACCURACY_REL_L2).value == 0.0  # type: ignore[union-attr]


def test_an_error_that_grew_by_more_than_a_tenth_of_its_tolerance_is_a_regression() -> None:
    base = make_run([accuracy_case(0.010)])
    # +0.006 > 0.05 / 10, still inside the tolerance: a regression of the error
    grown = accuracy_rows(base, make_run([accuracy_case(0.016)]))
    assert grown[ACCURACY_REL_L2] is Verdict.REGRESSION
    # +0.004 < 0.005: unchanged
    assert accuracy_rows(base, make_run([accuracy_case(0.014)]))[ACCURACY_REL_L2] is Verdict.UNCHANGED
    # an A/A on seeded inputs gives the same values: unchanged, exactly
    same = accuracy_rows(base, make_run([accuracy_case(0.010)]))
    assert same == {ACCURACY_REL_L2: Verdict.UNCHANGED, ACCURACY_MAX_ABS: Verdict.UNCHANGED}
    # an error that shrank by more than the threshold is an improvement; from exactly 0 it can grow
    assert accuracy_rows(base, make_run([accuracy_case(0.002)]))[ACCURACY_REL_L2] is Verdict.IMPROVEMENT
    zero = make_run([accuracy_case(0.0)])
    assert accuracy_rows(zero, make_run([accuracy_case(0.0)]))[ACCURACY_REL_L2] is Verdict.UNCHANGED
    assert accuracy_rows(zero, make_run([accuracy_case(0.01)]))[ACCURACY_REL_L2] is Verdict.REGRESSION
    comparison = compare_runs(base, make_run([accuracy_case(0.016)]), DecisionSettings())
    (row,) = [r for r in comparison.rows if r.metric == ACCURACY_REL_L2]
    assert row.threshold == pytest.approx(0.005) and row in comparison.failing
    # the threshold is said in the metric's unit, not as a percentage
    assert f"{ACCURACY_REL_L2}: regression +60.00%" in render_junit(comparison)
    assert "threshold 0.005 absolute" in render_junit(comparison)


def test_run_tables_show_the_accuracy_with_its_tolerance_and_history_stores_it(tmp_path: Path) -> None:
    run = make_run([accuracy_case(0.012)])
    console = Console(width=240, record=True, no_color=True)
    console.print(run_table(run))
    text = console.export_text()
    assert "rel L2 error" in text and "0.012 (tolerance 0.05)" in text and "max abs diff" in text
    summary = render_markdown(run, None)
    assert "| rel L2 error |" in summary and "0.012 (tolerance 0.05)" in summary
    page = render_report(ReportInput(run), charts=False)
    assert ">rel L2 error</th>" in page and "0.012 (tolerance 0.05)</td>" in page
    rows = {r[1]: r for r in prepare_run(run).rows}
    assert rows[ACCURACY_REL_L2][4] == 0.012 and rows[ACCURACY_REL_L2][7] is None  # no round statistics: untimed
    assert rows[ACCURACY_MAX_ABS][2] == default_registry()[ACCURACY_MAX_ABS].unit


def test_the_history_trends_an_accuracy_metric(tmp_path: Path) -> None:
    """Eight runs at one error, eight at twice that: one change point, where the error doubled (worse)."""
    store = HistoryStore(f"sqlite:///{tmp_path / 'h.db'}")
    runs = []
    for day, error in enumerate([0.010] * 8 + [0.020] * 8, start=1):
        run = make_run([accuracy_case(error)])
        when = f"2026-11-{day:02d}T00:00:00.000000Z"
        runs.append((replace(run, started_at=when, finished_at=when), "cpu-test"))
    assert store.ingest_many(runs) == (16, 0)
    (trend,) = trends(store, metric=ACCURACY_REL_L2)
    assert [p.value for p in trend.points] == [0.010] * 8 + [0.020] * 8
    (shift,) = trend.shifts
    assert shift.index == 8 and shift.ratio == pytest.approx(2.0) and trend.status() == "worse"
