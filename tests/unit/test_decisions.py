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
from perfci.reports.decisions import decision_tables, markdown_lines, text_lines
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
                m["value"] = float(host)
    return decode_results(json.dumps(doc).encode(), "test")


def test_rows_per_variant_and_batch_and_the_best_within_tolerance() -> None:
    (table,) = decision_tables(model_run())
    assert [(r.config, r.batch) for r in table.rows] == [(v, b) for v, b, *_ in GRID]
    by = {(r.config, r.batch): r for r in table.rows}
    bf16 = by[("bf16", 8)]
    assert bf16.per_item == pytest.approx(bf16.per_call / 8)
    assert bf16.items_per_s == pytest.approx(8 / bf16.per_call)
    assert by[("fp16", 8)].failed == "over tolerance"  # fastest per item, but its error is past 0.01
    assert table.best is bf16
    assert table.notes == ("bf16: no native bf16 here",)


def test_rank_by_memory_and_the_memory_limit() -> None:
    (by_memory,) = decision_tables(model_run(), rank="memory")
    assert (by_memory.best.config, by_memory.best.batch) == ("eager", 1)  # type: ignore[union-attr]
    (limited,) = decision_tables(model_run(), max_memory=5_000_000)
    assert (limited.best.config, limited.best.batch) == ("eager", 8)  # type: ignore[union-attr]
    assert len(limited.over_memory) == 3
    (none,) = decision_tables(model_run(), max_memory=1_000)
    assert none.best is None
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
    assert (table.best.config, table.best.batch) == ("bf16", 8)  # type: ignore[union-attr]


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
