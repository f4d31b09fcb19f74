"""Bandwidth above the runner's measured copy peak is marked implausible in every output and not compared."""

from __future__ import annotations

import json
import re
from dataclasses import replace

from perfci.compare.decide import compare_runs
from perfci.compare.policy import DecisionSettings
from perfci.format.model import CaseResult, RunResult
from perfci.format.schema import dump_results, load_results
from perfci.metrics.derive import case_metrics
from perfci.metrics.registry import BANDWIDTH, BANDWIDTH_PCT_PEAK, FLOPS, FLOPS_PCT_PEAK
from perfci.reports.case_rows import run_rows
from perfci.reports.markdown import render_markdown
from perfci.reports.terminal import run_table
from tests.conftest import make_case, make_run

PEAKS = {"bandwidth_gbps": 10.0, "flops": 1e11}


def _with_bytes(case: CaseResult, nbytes: float) -> CaseResult:
    return replace(case, flops=None, bytes=nbytes, metrics=case_metrics(case.rounds, None, nbytes, PEAKS))


def _run(case: CaseResult) -> RunResult:
    run = make_run([case])
    return replace(run, fingerprint={**run.fingerprint, "peaks": PEAKS})


def test_bandwidth_above_the_copy_peak_is_marked_and_not_compared(tmp_path) -> None:  # type: ignore[no-untyped-def]
    case = make_case("big", 1e-6)  # 1 us per call
    ok, wild = _with_bytes(case, 4e3), _with_bytes(case, 4e8)  # 4 GB/s; 400,000 GB/s
    bw = ok.metric(BANDWIDTH)
    assert bw is not None and not bw.note
    marked = wild.metric(BANDWIDTH)
    pct = wild.metric(BANDWIDTH_PCT_PEAK)
    assert marked is not None and marked.note.startswith("implausible") and pct is not None and pct.note
    settings = DecisionSettings(metrics=("latency.median", BANDWIDTH))
    comparison = compare_runs(_run(wild), _run(wild), settings)
    assert BANDWIDTH not in {r.metric for r in comparison.rows}
    assert any("not compared" in w and "implausible" in w for w in comparison.warnings)
    # every output says so: results JSON, HTML rows, Markdown, terminal
    path = tmp_path / "results.json"
    dump_results(_run(wild), path)
    saved = json.loads(path.read_text())["cases"][0]["metrics"]
    assert any(m["name"] == BANDWIDTH and m["note"].startswith("implausible") for m in saved)
    assert load_results(path).cases[0].metric(BANDWIDTH).note == marked.note  # type: ignore[union-attr]
    row = run_rows(_run(wild))[0]
    assert "implausible" in row.bandwidth and "implausible" in row.notes
    assert "implausible bandwidth" in render_markdown(_run(wild), None)
    assert "implausible" in str([cell.plain for row in run_table(_run(wild)).rows for cell in row.cells])
    assert "implausible" not in render_markdown(_run(ok), None)


def test_the_note_says_why_by_where_the_bytes_came_from() -> None:
    """Derived bytes above the peak count traffic the call does not make; declared bytes above it stay in cache
    (a working set smaller than the caches, as the default suite's layernorm on a CPU with a large L3)."""
    case = make_case("big", 1e-6)
    for source, says in (("derived", "declare ctx.bytes"), ("declared", "stay in cache")):
        rounds = tuple(replace(r, telemetry={**r.telemetry, "work_sources": {"bytes": source}}) for r in case.rounds)
        note = case_metrics(rounds, case.flops, 4e8, PEAKS)
        bw = next(m for m in note if m.name == BANDWIDTH)
        assert bw.note.startswith("implausible") and says in bw.note and bw.note.endswith("Not compared.")


def test_flops_above_the_matmul_peak_are_marked_and_not_compared() -> None:
    """FLOP/s 1.5x the runner's measured matmul peak was printed as "150% of peak": a FLOPs count that is off, or a
    faster number format than the peak's. Marked in every output, left out of comparisons; latency still compared."""
    case = make_case("mm", 1e-6)  # 1 us per call; the peak is 1e11 FLOP/s
    fast, wild = (replace(case, flops=f, metrics=case_metrics(case.rounds, f, None, PEAKS)) for f in (5e4, 1.5e5))
    assert all(not m.note for m in fast.metrics)
    marked, pct = wild.metric(FLOPS), wild.metric(FLOPS_PCT_PEAK)
    assert marked is not None and pct is not None and pct.note == marked.note
    assert re.match(
        r"implausible: 1\d\d\.\d GFLOP/s is 1\.\d+x this runner's measured matmul peak \(100 GFLOP/s\)", marked.note
    )
    assert "the FLOPs counted per call" in marked.note and marked.note.endswith("Not compared.")
    settings = DecisionSettings(metrics=("latency.median", FLOPS))
    comparison = compare_runs(_run(wild), _run(wild), settings)
    assert {r.metric for r in comparison.rows} == {"latency.median"}
    row = run_rows(_run(wild))[0]
    assert row.flops.endswith("implausible") and "matmul peak" in row.notes
    assert "implausible FLOP/s" in render_markdown(_run(wild), None)
    assert "matmul peak" in str([row.note.plain for row in run_table(_run(wild)).rows if row.note])
    assert "implausible" not in render_markdown(_run(fast), None)
