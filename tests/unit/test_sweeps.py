"""Sweep views (perfci/reports/sweeps.py, the sweep chart data in charts.py): which parameters sweep, the headline
metric, the best configuration among cases whose outputs agree, and `perfci run --format json`'s `sweeps`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from perfci.api.run import RunOutcome
from perfci.format.model import CaseError, CaseResult, CaseSpec, CaseStatus, ParamValue
from perfci.metrics.registry import LATENCY, THROUGHPUT
from perfci.reports.case_rows import ReportInput
from perfci.reports.charts import chart_data
from perfci.reports.html import render_html
from perfci.reports.sweeps import best_configurations, find_sweeps
from tests.conftest import make_case, make_run
from tests.formats import with_spec


def case(workload: str, params: dict[str, ParamValue], seconds: float, seed: int = 0) -> CaseResult:
    c = make_case(f"{workload}{params}", seconds, seed=seed)
    return with_spec(c, CaseSpec(workload=workload, params=params, device="cpu", source="t"))


def failed_check(c: CaseResult) -> CaseResult:
    error = CaseError("check", "correctness check failed: relative L2 error 0.3 exceeds 0.05")
    return replace(c, status=CaseStatus.ERROR, rounds=(), metrics=(), errors=(error,))


def grid() -> list[CaseResult]:
    """matmul over n (3 values) x dtype (2): fp16 fastest at n=64 but its check failed there."""
    out = []
    for dtype, k in (("fp32", 1.0), ("fp16", 0.5)):
        for n in (256, 64, 128):
            out.append(case("k.matmul", {"n": n, "dtype": dtype}, 1e-5 * n / 64 * k))
    out[3] = failed_check(out[3])  # fp16, n=256
    out[4] = failed_check(out[4])  # fp16, n=64: the fastest of all, but its output did not agree
    return [*out, case("k.single", {"n": 8}, 1e-5)]


def test_swept_parameters_and_best_among_agreeing_outputs() -> None:
    sweeps = find_sweeps(make_run(grid()))
    assert [s.key for s in sweeps] == ["k.matmul@cpu"]  # k.single has one case: no sweep
    s = sweeps[0]
    assert s.swept == ("n", "dtype") and s.metric == LATENCY
    assert s.best is not None and s.best.spec.params == {"n": 64, "dtype": "fp32"}  # fp16/64 failed its check
    measured = [c for c in s.cases if c.status is CaseStatus.OK]
    best_median = min(measured, key=lambda c: c.metric(LATENCY).value)  # type: ignore[union-attr]
    assert s.best.id == best_median.id
    assert sorted(s.excluded()) == sorted(c.id for c in s.cases if c.status is CaseStatus.ERROR)


def test_batch_parameter_makes_throughput_per_item_the_headline() -> None:
    cases = [case("m.mlp", {"batch": b}, 1e-4 * (1 + b / 16)) for b in (1, 8, 64)]
    (s,) = find_sweeps(make_run(cases))
    assert s.metric == THROUGHPUT and s.batch == "batch" and s.unit == "items/s"
    assert s.best is not None and s.best.spec.params["batch"] == 64  # slower per call, faster per item
    (doc,) = best_configurations(make_run(cases))
    assert doc["best"]["case"] == s.best.id and doc["better"] == "higher" and doc["per_item_of"] == "batch"
    assert s.sizes == () and doc["sizes"] == []  # the batch is not a size: per item, batch sizes do the same work


def test_numeric_parameters_other_than_the_batch_are_sizes() -> None:
    cases = [case("k.mm", {"n": n, "dtype": d}, 1e-4 * n) for n in (256, 1024) for d in ("float32", "bfloat16")]
    (s,) = find_sweeps(make_run(cases))
    assert s.sizes == ("n",) and best_configurations(make_run(cases))[0]["sizes"] == ["n"]


def test_chart_data_has_a_line_per_other_combination_and_both_sides() -> None:
    base, cand = make_run(grid()), make_run([replace(c) for c in grid()])
    data = chart_data(ReportInput(cand, None, base))["sweep"]
    by_n = next(d for d in data if d["p"] == "n")
    assert by_n["x"] == ["64", "128", "256"] and by_n["k"] == ["dtype=fp32", "dtype=fp16"]
    assert by_n["n"][1][0] is None and by_n["n"][0][0] is not None  # fp16 at n=64 failed: no point
    assert by_n["bn"] == [0, 0] and by_n["bb"] == [0, 0]  # best: fp32 at n=64, on both sides
    value, low, high = by_n["n"][0][0]
    assert low <= value <= high
    assert next(d for d in data if d["p"] == "dtype")["x"] == ["fp16", "fp32"]
    assert 'id="sweep-block"' in render_html(cand, None, base)


def test_run_format_json_includes_the_best_configuration_per_sweep() -> None:
    run = make_run(grid())
    doc = RunOutcome(run, None, None, out_dir=Path(".")).results_document()
    assert doc["sweeps"][0]["best"]["params"] == {"n": 64, "dtype": "fp32"}
    assert doc["sweeps"][0]["excluded"] and doc["cases"]
