"""Decision tables (perfci/reports/decisions.py) and the notes that explain surprises (workloads/surprises.py):
rows per variant and batch, time per item, the best configuration within the accuracy tolerance, ranking by
memory, the memory limit, and every terminal line within its width."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from perfci.format.model import RunResult
from perfci.format.schema import decode_results, run_to_dict
from perfci.reports.decision_lines import markdown_lines, text_lines
from perfci.reports.decisions import decision_tables
from perfci.reports.markdown import code
from perfci.workloads import surprises
from tests.conftest import make_case, make_run

# (variant, batch, seconds per call, host bytes, relative L2 error)
GRID = [
    ("eager", 1, 80e-6, 2_000_000, 0.0),
    ("eager", 8, 212e-6, 2_100_000, 0.0),
    ("bf16", 1, 212e-6, 7_000_000, 0.004),
    ("bf16", 8, 150e-6, 6_900_000, 0.004),  # fastest per item: 18.75 µs
    ("fp16", 8, 100e-6, 6_000_000, 0.2),  # faster still, but beyond its tolerance (0.01)
]
LIMITS = {"eager": None, "bf16": 0.05, "fp16": 0.01}


def model_run(grid: list[tuple[str, int, float, int, float]] = GRID) -> RunResult:
    cases = [make_case(f"m{i}", s) for i, (_, _, s, _, _) in enumerate(grid)]
    doc: dict[str, Any] = run_to_dict(make_run(cases))
    for c, (variant, batch, _, host, err) in zip(doc["cases"], grid, strict=True):
        c["workload"], c["params"] = "wl.model", {"variant": variant, "batch": batch}
        c["id"] = f"wl.model[variant={variant},batch={batch}]@cpu"
        limit = LIMITS[variant]
        tolerance = {"max_rel_l2": limit, "rule": f"relative L2 error <= {limit}"} if limit else {"rule": "rtol"}
        for r in c["rounds"]:
            r["telemetry"]["memory_host_bytes"] = host
            r["telemetry"]["notes"] = {
                "accuracy": {"reference": "eager fp32", "tolerance": tolerance, "rel_l2": err, "max_abs_diff": err},
                **({"explain": ["no native bf16 here"]} if variant == "bf16" else {}),
            }
        for m in c["metrics"]:
            if m["name"] == "memory.host":
                m["value"] = m["low"] = m["high"] = float(host)
    return decode_results(json.dumps(doc).encode(), "test")


def test_rows_per_variant_and_batch_and_the_best_within_tolerance() -> None:
    (table,) = decision_tables(model_run())
    assert [(r.config, r.batch) for r in table.rows] == [(v, b) for v, b, *_ in GRID]
    by = {(r.config, r.batch): r for r in table.rows}
    bf16 = by[("bf16", 8)]
    assert bf16.per_item == pytest.approx(bf16.per_call / 8)
    assert bf16.items_per_s == pytest.approx(8 / bf16.per_call)
    assert by[("fp16", 8)].failed == "over tolerance"  # fastest per item, but its error is past 0.01
    assert len(table.best) == 1 and table.best[0] is bf16
    assert table.notes == ("bf16: no native bf16 here",)


def test_rank_by_memory_and_the_memory_limit() -> None:
    (by_memory,) = decision_tables(model_run(), rank="memory")
    assert [(b.config, b.batch) for b in by_memory.best] == [("eager", 1)]
    (limited,) = decision_tables(model_run(), max_memory=5_000_000)
    assert [(b.config, b.batch) for b in limited.best] == [("eager", 8)]
    assert len(limited.over_memory) == 3
    (none,) = decision_tables(model_run(), max_memory=1_000)
    assert none.best == ()
    with pytest.raises(ValueError):
        decision_tables(model_run(), rank="luck")


def test_markdown_names_the_best_configuration_with_time_per_item_and_accuracy() -> None:
    text = "\n".join(markdown_lines(decision_tables(model_run()), code))
    assert "per item" in text and "items/s" in text
    assert "best configuration by time per item within its accuracy tolerance: bf16, batch 8" in text
    assert "0.004 (≤ 0.05)" in text
    assert "fp16 batch 8 (over tolerance)" in text


def test_a_case_whose_check_failed_at_set_up_is_not_shown_as_the_reference() -> None:
    doc: dict[str, Any] = run_to_dict(model_run())
    int8 = doc["cases"][4]  # fp16 batch 8 becomes an int8 case whose set-up check raised: no rounds, no accuracy
    error = {"kind": "check", "message": "correctness check failed: 0.98 > 0.05"}
    int8.update(id="wl.model[variant=int8,batch=8]@cpu", params={"variant": "int8", "batch": 8}, status="error",
                rounds=[], metrics=[], errors=[error])  # fmt: skip
    (table,) = decision_tables(decode_results(json.dumps(doc).encode(), "test"))
    row = {r.config: r for r in table.rows if r.batch == 8}["int8"]
    assert row.failed == "check failed" and row.accuracy is None
    text = "\n".join(markdown_lines([table], code))
    assert "| `int8` | 8 | - | - | - | - | - (check failed) |" in text, text
    assert "int8 batch 8 (check failed)" in text and "reference: " not in text
    assert [(b.config, b.batch) for b in table.best] == [("bf16", 8)]


@pytest.mark.parametrize("width", [60, 80, 120])
def test_terminal_lines_fit_their_width_and_cut_nothing(width: int) -> None:
    long = [(f"variant-{'x' * 40}", 1, 1e-4, 1, 0.0)]
    LIMITS[long[0][0]] = None
    lines = text_lines(decision_tables(model_run([*GRID, *long])), width)
    assert max(len(line) for line in lines) <= width
    assert "…" not in "\n".join(lines)
    assert any(long[0][0] in line for line in lines)  # whole: in its column, or on its own line where too wide
    if width < 80:
        assert any(line.strip() == long[0][0] for line in lines)


def test_reduced_precision_note_only_without_native_support(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor : 0\nflags : fpu sse avx2 avx512f\n")
    flags = surprises.cpu_flags(info)
    assert "avx2" in flags
    assert "no native bf16" in (surprises.reduced_precision_note("bf16", flags) or "")
    assert surprises.reduced_precision_note("bf16", flags | {"amx_bf16"}) is None
    assert surprises.reduced_precision_note("bf16", frozenset()) is None  # nothing known: nothing claimed
    assert surprises.cpu_flags(tmp_path / "missing") == frozenset()


def test_provider_fallback_and_recompile_notes() -> None:
    cuda = [("CUDAExecutionProvider", {"device_id": 0}), "CPUExecutionProvider"]
    assert "fell back to the CPU" in (surprises.provider_fallback_note(cuda, ["CPUExecutionProvider"]) or "")
    assert surprises.provider_fallback_note(cuda, ["CUDAExecutionProvider", "CPUExecutionProvider"]) is None
    assert surprises.provider_fallback_note(["CPUExecutionProvider"], ["CPUExecutionProvider"]) is None
    assert "recompiled" in (surprises.recompile_note(1, 2) or "")
    assert surprises.recompile_note(2, 2) is None and surprises.recompile_note(None, 3) is None
    notes: dict[str, Any] = {}
    surprises.explain(notes, "a")
    surprises.explain(notes, "a")
    assert notes == {"explain": ["a"]}


def test_a_parameter_that_does_not_vary_is_shown_with_its_name() -> None:
    grid = [("eager", 1, 80e-6, 2_000_000, 0.0), ("eager", 8, 212e-6, 2_100_000, 0.0)]
    (table,) = decision_tables(model_run(grid))  # only the batch is swept
    assert [r.config for r in table.rows] == ["variant=eager", "variant=eager"]


def kernel_run(grid: list[tuple[int, str, float]]) -> RunResult:
    """A plain workload swept by a size `n` and a `dtype`, no batch: (n, dtype, seconds per call)."""
    doc: dict[str, Any] = run_to_dict(make_run([make_case(f"k{i}", s) for i, (_, _, s) in enumerate(grid)]))
    for c, (n, dtype, _) in zip(doc["cases"], grid, strict=True):
        c["workload"], c["params"], c["id"] = (
            "wl.matmul",
            {"n": n, "dtype": dtype},
            f"wl.matmul[n={n},dtype={dtype}]@cpu",
        )
    return decode_results(json.dumps(doc).encode(), "test")


def test_sizes_are_not_ranked_against_each_other() -> None:
    """Rows of different sizes do different work: the smallest is always quickest, so the best is named per size."""
    grid = [
        (256, "float32", 1e-4),
        (256, "bfloat16", 2e-4),
        (1024, "float32", 9e-3),
        (1024, "bfloat16", 5e-3),
        (4096, "float32", 0.5),
    ]  # fmt: skip  (n=4096 measured in one configuration: nothing to choose there)
    (table,) = decision_tables(kernel_run(grid))
    assert table.sizes == ("n",)
    assert [(b.config, b.batch) for b in table.best] == [("n=256,dtype=float32", None), ("n=1024,dtype=bfloat16", None)]
    text = "\n".join(text_lines([table], 120))
    assert "best configuration at n=256 by time per call: n=256,dtype=float32 (" in text
    assert "best configuration at n=1024 by time per call: n=1024,dtype=bfloat16 (" in text
    assert "per item" not in text and "calls/s" in text  # no batch: a call is the unit
    assert "at n=4096" not in text and not any(
        line.lstrip().startswith("n=4096,dtype=float32 *") for line in text.splitlines()
    )


def test_a_sweep_of_sizes_alone_names_no_best_configuration() -> None:
    (table,) = decision_tables(kernel_run([(256, "float32", 1e-4), (1024, "float32", 9e-3)]))
    (line,) = [line for line in markdown_lines([table], code) if "best configuration" in line]
    assert (
        line
        == "**no best configuration: the rows differ only in n, sizes of the work, which are not a choice to rank**"
    )
    assert table.best == () and not any(" *" in row for row in text_lines([table], 120))


def test_configurations_whose_intervals_overlap_are_a_tie_not_a_best() -> None:
    """Two variants that run the same code: whichever drew the lower median was named best, run after run."""
    grid = [("eager", 8, 150.0e-6, 2_000_000, 0.0), ("bf16", 8, 150.5e-6, 2_100_000, 0.004),
            ("bf16", 1, 212e-6, 7_000_000, 0.004)]  # fmt: skip
    (table,) = decision_tables(model_run(grid))
    first, second, slow = table.rows
    assert table.best == (first,) and table.ties_of(first) == (second,)
    lo, _ = table.span_of(second)  # type: ignore[misc]
    assert lo <= table.span_of(first)[1] and table.span_of(slow)[0] > table.span_of(first)[1]  # type: ignore[index]
    text = "\n".join(markdown_lines([table], code))
    assert "a tie between eager (batch 8, " in text and "and bf16 (batch 8): their intervals overlap" in text
    starred = [line for line in text.splitlines() if "` *" in line or " *`" in line]
    assert len(starred) == 2  # both tied rows carry the star
    # apart: the same rows 20% apart are not a tie
    (apart,) = decision_tables(model_run([grid[0], (*grid[1][:2], 180e-6, *grid[1][3:]), grid[2]]))
    assert apart.ties_of(apart.best[0]) == () and "tie" not in "\n".join(markdown_lines([apart], code))
    # by memory, each row's range over its rounds: distinct figures, no tie
    (by_memory,) = decision_tables(model_run(grid), rank="memory")
    assert by_memory.ties_of(by_memory.best[0]) == ()
    for line in text_lines([table], width=80):
        assert len(line) <= 80, line


def test_no_best_when_every_configuration_failed_to_run_says_so() -> None:
    from dataclasses import replace

    from perfci.format.model import CaseError, CaseStatus

    run = model_run()
    crashed = [replace(c, status=CaseStatus.ERROR, errors=(CaseError("oom", "over the limit"),)) for c in run.cases]
    (table,) = decision_tables(replace(run, cases=tuple(crashed)))
    text = "\n".join(markdown_lines([table], code))
    assert (
        "best configuration: none (no configuration measured: oom)" in text
        and "tolerance" not in text.split("best configuration")[1].split("\n")[0]
    )


def test_a_long_configuration_goes_on_its_own_line_and_pushes_no_column_out() -> None:
    """A CI log's tables (120 columns) dropped calls/s for one parameter value 150 characters long."""
    long = "v" * 150
    grid = [(long, 8, 150e-6, 2_000_000, 0.0), ("eager", 8, 212e-6, 2_100_000, 0.0)]
    LIMITS[long] = None
    try:
        lines = text_lines(decision_tables(model_run(grid)), width=120)
    finally:
        del LIMITS[long]
    assert not any("not shown at this width" in line for line in lines)
    assert any(line.strip() == f"{long} *" for line in lines)  # whole (and starred: the best), on its own line
    assert all(len(line) <= 120 for line in lines if long not in line)


def test_the_reference_configuration_reads_reference_not_an_exact_variant() -> None:
    """eager, checked against a second run of itself ("eager fp32"), read "0 (≤ 1.3e-05)"."""
    (table,) = decision_tables(model_run())
    text = "\n".join(markdown_lines([table], code))
    eager_rows = [line for line in text.splitlines() if line.startswith("| `eager")]
    assert eager_rows and all(line.rstrip(" |").endswith("reference") for line in eager_rows)
    bf16_rows = [line for line in text.splitlines() if line.startswith("| `bf16")]
    assert bf16_rows and all("0.004 (≤ 0.05)" in line for line in bf16_rows)


def test_one_compare_with_files_works_the_tables_out_once_for_report_summary_and_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from perfci.api.compare import CompareRequest, Outputs, compare_files
    from perfci.api.settings import Settings
    from perfci.format.schema import dump_results
    from perfci.reports import decisions

    run = model_run()
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    dump_results(run, base)
    dump_results(run, cand)
    calls: list[int] = []
    real = decisions.decision_tables

    def counted(*args: Any, **kwargs: Any) -> list[decisions.DecisionTable]:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(decisions, "decision_tables", counted)
    out = tmp_path / "out"
    outcome = compare_files(Settings(), CompareRequest(baseline=base, candidate=cand, outputs=Outputs(out=out)))
    terminal = text_lines(outcome.decisions.tables(outcome.candidate), 120)
    assert len(calls) == 1
    assert any("bf16" in line and "best" in line.lower() for line in terminal)
    assert "bf16" in (out / "summary.md").read_text() and "bf16" in (out / "report.html").read_text()
    # without files, nothing is worked out ahead (a --format json compare shows no table)
    calls.clear()
    bare = compare_files(Settings(), CompareRequest(baseline=base, candidate=cand))
    assert calls == [] and bare.decisions.bound is None
