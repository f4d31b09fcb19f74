"""A metric defined once: a new metric is its definition (made here, in the test module) plus its derivation, and
with a registry that holds it, it is derived, gated, reported and stored with no edit anywhere else."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from rich.console import Console

from perfci.compare.decide import compare_runs
from perfci.compare.policy import DecisionSettings, practical_threshold
from perfci.format.model import CaseResult, CaseSpec, CaseStatus, Direction, Round, RunResult, Verdict
from perfci.metrics import MetricRegistry, Threshold, case_metrics, default_registry, metric
from perfci.metrics.definition import GREW, SLOWER
from perfci.metrics.registry import LATENCY, MEMORY_HOST
from perfci.reports.markdown import render_markdown
from perfci.reports.terminal import comparison_table, run_table
from perfci.store.history import HistoryStore, prepare_run
from tests.conftest import make_run
from tests.store_cases import stored_rows

POWER = "power.peak"


@metric(name=POWER, unit="W", direction=Direction.LOWER, threshold=Threshold(relative=0.05), compared=True,
        column="peak power")  # fmt: skip
def peak_power(r: Round, c: CaseResult | None) -> float | None:
    """The round's peak board power, as its telemetry notes recorded it."""
    notes = r.telemetry.get("notes") or {}
    value = notes.get("peak_power_w")
    return float(value) if value else None


def with_power() -> MetricRegistry:
    return default_registry().with_metrics(peak_power)


def power_case(watts: float, seed: int, registry: MetricRegistry) -> CaseResult:
    """A case of 5 rounds at 1 ms a call whose rounds drew about `watts` (1% noise, seeded)."""
    rng = random.Random(seed)
    rounds = tuple(
        Round(index=i, pid=100 + i, iterations=10, samples=tuple(0.01 * (1 + rng.gauss(0, 0.01)) for _ in range(15)),
              warmup_s=0.01, stop_reason="budget", threads=1,
              telemetry={"memory_host_bytes": 1_000_000, "notes": {"peak_power_w": watts * (1 + rng.gauss(0, 0.01))}})
        for i in range(5)
    )  # fmt: skip
    spec = CaseSpec(workload="t.gemm", params={"n": 64}, device="cpu", source="tests")
    return CaseResult.of(spec, CaseStatus.OK, rounds, case_metrics(rounds, None, None, registry=registry), ())


def runs(base_w: float, cand_w: float, registry: MetricRegistry) -> tuple[RunResult, RunResult]:
    return make_run([power_case(base_w, 1, registry)]), make_run([power_case(cand_w, 2, registry)])


def _text(table: object) -> str:
    console = Console(width=220, record=True, no_color=True)
    console.print(table)
    return console.export_text()


def test_the_definition_owns_what_the_metric_is() -> None:
    assert (peak_power.name, peak_power.family, peak_power.unit, peak_power.direction) == (
        POWER, "power", "W", Direction.LOWER
    )  # fmt: skip
    assert peak_power.timed and peak_power.history_rounds and peak_power.moves != GREW
    registry = with_power()
    assert POWER in registry and POWER not in default_registry()  # the default registry is left as it was
    assert POWER in registry.compared_by_default() and "power" in registry.threshold_keys()
    assert registry.columns()[-1] is peak_power
    settings = DecisionSettings(registry=registry)
    assert practical_threshold(settings, "t.gemm[n=64]@cpu", peak_power) == 0.05
    assert default_registry()[LATENCY].moves == SLOWER and default_registry()[MEMORY_HOST].moves == GREW
    with pytest.raises(ValueError, match="defined twice"):
        registry.with_metrics(peak_power)


def test_a_new_metric_is_derived_gated_reported_and_stored(tmp_path: Path) -> None:
    registry = with_power()
    base, cand = runs(300.0, 400.0, registry)
    m = cand.cases[0].metric(POWER)
    assert m is not None and m.unit == "W" and m.value == pytest.approx(400.0, rel=0.03)
    assert m.low is not None and m.high is not None and m.low < m.value < m.high  # a timed metric's interval

    # gated: a third more power is a regression of this metric (same-machine pairs), and fails the gate
    settings = DecisionSettings(registry=registry, metrics=registry.compared_by_default())
    comparison = compare_runs(base, cand, settings, paired=True)
    (row,) = [r for r in comparison.rows if r.metric == POWER]
    assert row.verdict is Verdict.REGRESSION and row.unit == "W" and row.threshold == 0.05
    assert row in comparison.failing
    # an A/A of the same values is unchanged
    same = compare_runs(base, base, settings, paired=True)
    assert [r.verdict for r in same.rows if r.metric == POWER] == [Verdict.UNCHANGED]

    # reported: the comparison's rows in the terminal and in summary.md, the run table's column of its own
    assert POWER in _text(comparison_table(comparison))
    assert f"`{POWER}`" in render_markdown(cand, comparison, base)
    table = _text(run_table(cand, registry))
    assert "peak power" in table and "W" in table.split("peak power", 1)[1]
    assert "peak power" not in _text(run_table(cand))  # the default registry has no such column

    # stored: its history row, with the round statistics of a timed metric
    db = f"sqlite:///{tmp_path / 'h.db'}"
    assert HistoryStore(db).ingest_many([(prepare_run(cand, registry), "cpu-test")]) == (1, 0)
    _, rows = stored_rows(db)[(cand.run_id, "cpu-test")]
    (power,) = [r for r in rows if r[1] == POWER]
    assert power[2] == "W" and power[4] == pytest.approx(m.value) and power[7] == 5
    assert power[8] is not None and power[9] is not None and power[9] < 0.05  # mean and sd of the logs
