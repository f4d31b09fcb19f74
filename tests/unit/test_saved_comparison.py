"""The saved-comparison format: round trip, validation on read, clear errors."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from perfci.errors import ResultsFormatError
from perfci.format.comparison import V1_WARNING, comparison_to_dict, dump_comparison
from perfci.format.model import Comparison, Direction, MetricComparison, Verdict
from tests.formats import load_comparison, parse_comparison

GOLDEN = Path(__file__).parent.parent / "golden"


def _comparison() -> Comparison:
    rows = (
        MetricComparison(
            "w.a@cpu",
            "latency.median",
            Verdict.REGRESSION,
            "s",
            1.0,
            1.1,
            1.1,
            1.05,
            1.15,
            0.03,
            method="paired",
            confidence=0.99,
            bound=1.04,
            noise=0.01,
            n_baseline=6,
            n_candidate=6,
        ),
        MetricComparison(
            "w.b@cpu",
            "throughput",
            Verdict.UNCHANGED,
            "calls/s",
            10.0,
            10.0,
            1.0,
            direction=Direction.HIGHER,
            bound=math.nan,
        ),
        MetricComparison("w.c@cpu", "latency.median", Verdict.NEW, "s", None, 2.0),
    )
    return Comparison(
        "base",
        "head",
        rows,
        ("fingerprint: torch 2.4 vs 2.5",),
        mode="paired",
        baseline_run={"run_id": "r1", "git": {"commit": "abc"}, "fingerprint": {"cpu_model": "x"}},
        settings={"alpha": 0.01},
    )


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "comparison.json"
    original = _comparison()
    dump_comparison(original, path)
    doc = json.loads(path.read_text())
    assert doc["schema"] == "perfci.comparison" and doc["schema_version"] == 2
    assert doc["verdict"] == {"gate": "fail", "counts": {"regression": 1, "unchanged": 1, "new": 1}}
    loaded = load_comparison(path)
    assert loaded.rows[0] == original.rows[0]
    assert loaded.rows[1].bound is None  # nan is written as null
    assert loaded.rows[1].direction is Direction.HIGHER
    assert loaded.warnings == original.warnings and loaded.mode == "paired"
    assert loaded.baseline_run["run_id"] == "r1"


def test_expected_regression_passes_the_gate() -> None:
    c = _comparison()
    rows = (replace(c.rows[0], expected="trade speed for accuracy"),)
    doc = comparison_to_dict(Comparison("a", "b", rows))
    assert doc["verdict"]["gate"] == "pass"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(schema="perfci.results"), "not a perfci comparison"),
        (lambda d: d.update(schema_version=9), "schema_version 9"),
        (lambda d: d["rows"][0].update(verdict="maybe"), "rows/0/verdict"),
        (lambda d: d.pop("rows"), "rows"),
    ],
)
def test_invalid_documents_are_clear_errors(mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    doc = comparison_to_dict(_comparison())
    mutate(doc)
    with pytest.raises(ResultsFormatError, match=message):
        parse_comparison(doc, "c.json")


def test_truncated_file(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    dump_comparison(_comparison(), path)
    path.write_text(path.read_text()[:200])
    with pytest.raises(ResultsFormatError, match="truncated"):
        load_comparison(path)


def test_golden_v1_file_still_loads() -> None:
    """tests/golden/comparison-v1.json was written by perfci before versioned documents were one mechanism. It
    migrates to version 2: rows as they were, and a warning that its `unchanged` is the older word."""
    loaded = load_comparison(GOLDEN / "comparison-v1.json")
    saved = _comparison_as_saved()
    assert loaded == replace(saved, warnings=(*saved.warnings, V1_WARNING))
    v1 = json.loads((GOLDEN / "comparison-v1.json").read_text())
    rows = [{**row, "mdc": None} for row in v1["rows"]]
    v2 = {**v1, "schema_version": 2, "rows": rows, "warnings": [*v1["warnings"], V1_WARNING]}
    # written again, it holds every field of version 2: an optional one the file left out (`mdc`) as null
    assert comparison_to_dict(loaded, created_at="2026-11-30T01:00:00.000000Z") == v2


def test_golden_v2_file_loads() -> None:
    """tests/golden/comparison-v2.json: the current version, with slower/faster rows and minimum detectable
    changes."""
    doc = json.loads((GOLDEN / "comparison-v2.json").read_text())
    loaded = load_comparison(GOLDEN / "comparison-v2.json")
    assert [r.verdict for r in loaded.rows] == [Verdict.SLOWER, Verdict.FASTER, Verdict.UNCHANGED]
    assert [r.mdc for r in loaded.rows] == [0.011, 0.012, 0.009]
    assert comparison_to_dict(loaded, created_at=doc["created_at"]) == doc


def _comparison_as_saved() -> Comparison:
    """`_comparison()` as a file keeps it: nan as None, both sides with the three run fields."""
    c = _comparison()
    rows = (c.rows[0], replace(c.rows[1], bound=None), c.rows[2])
    empty = {"run_id": None, "git": None, "fingerprint": None}
    return Comparison(c.baseline_label, c.candidate_label, rows, c.warnings, c.mode, c.baseline_run, empty, c.settings)
