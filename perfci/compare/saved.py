"""Saved comparisons: the versioned JSON format of a `Comparison`, written as `comparison.json`.

`perfci compare` and `perfci ab` write `comparison.json` next to their report when given an output folder;
`perfci report` renders it again. Every reader goes through `load_comparison`/`parse_comparison`, which read it as
the versioned document `COMPARISON` (perfci/schema.py: format check, migrations from older versions, validation
against `perfci/schemas/comparison-v<N>.schema.json`); any problem is a `ResultsFormatError` (exit code 2).

Format, version 2 (documented in docs/compare.md):

    {
      "schema": "perfci.comparison", "schema_version": 2,
      "created_at": "2026-11-30T01:00:00.000000Z",          # UTC ISO-8601
      "mode": "paired" | "unpaired",                        # same-machine A/B, or two separate result files
      "baseline":  {"label": str, "run_id": str|null, "git": {...}|null, "fingerprint": {...}|null},
      "candidate": {"label": str, "run_id": str|null, "git": {...}|null, "fingerprint": {...}|null},
      "verdict": {"gate": "pass"|"fail", "counts": {"regression": 1, "unchanged": 12, ...}},
      "rows": [ {                                           # one per case and metric (MetricComparison)
          "case_id": str, "metric": str, "verdict": "regression"|"improvement"|"slower"|"faster"|"unchanged"
                                                            |"inconclusive"|"new"|"missing"|"error",
          "unit": str, "baseline": num|null, "candidate": num|null,
          "ratio": num|null,                                # candidate / baseline
          "ratio_low": num|null, "ratio_high": num|null,    # two-sided interval of the ratio at `confidence`
          "bound": num|null,                                # one-sided bound on the verdict's "worse" side
          "threshold": num|null,                            # practical threshold used (fraction, 0.03 = 3%)
          "noise": num|null,                                # standard error of log(ratio)
          "direction": "lower"|"higher", "method": "paired"|"unpaired"|"tolerance"|"",
          "confidence": num|null, "n_baseline": int|null, "n_candidate": int|null,
          "note": str, "expected": str,                     # expected: reason of a declared expected change
          "mdc": num|null                                   # minimum detectable change at 80% power (fraction)
      } ],
      "warnings": [str],                                    # e.g. fingerprint mismatches
      "settings": {...}                                     # decision settings (alpha, looks, thresholds)
    }

Non-finite numbers are written as null. The gate in "verdict" counts only regressions not covered by a declared
expected change (and `slower` rows too when settings.fail_on is "slower").

Version 1 (perfci before issue #20) had no `slower`/`faster` verdicts and no `mdc`, and its `unchanged` meant "no
change of the threshold was seen", not "equivalence established". It migrates to version 2 with its rows as they
were and a warning that says so.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from datetime import UTC, datetime
from math import isfinite
from pathlib import Path
from typing import Any

from perfci.model import Comparison, Direction, MetricComparison, RunResult, Verdict
from perfci.schema import DocumentFormat, gc_paused, json_safe, shallow_dict, shipped_schemas, write_json_document

SCHEMA_NAME = "perfci.comparison"
SCHEMA_VERSION = 2
V1_WARNING = (
    "saved by an older perfci (comparison version 1): its 'unchanged' means no change of the threshold was seen, "
    "not that equivalence was established; small established changes were not named (slower/faster), and no "
    "minimum detectable change was recorded"
)


def _v1_to_v2(doc: dict[str, Any]) -> dict[str, Any]:
    """Rows as they were (v1's verdicts are a subset of v2's); a warning that the older vocabulary applies."""
    warnings = doc.get("warnings")
    return {**doc, "warnings": [*warnings, V1_WARNING]} if isinstance(warnings, list) else doc


COMPARISON = DocumentFormat(
    SCHEMA_NAME, "comparison", SCHEMA_VERSION, shipped_schemas("comparison"), {1: _v1_to_v2}, shallow=frozenset({1})
)


def run_side(run: RunResult | None) -> dict[str, Any]:
    """What a comparison keeps of each run: id, git and fingerprint."""
    if run is None:
        return {}
    return {"run_id": run.run_id, "git": asdict(run.git) if run.git else None, "fingerprint": run.fingerprint}


def _row_to_dict(row: MetricComparison) -> dict[str, Any]:
    """`json_safe` of the row's fields, for the scalars a row holds: a non-finite float becomes None, the
    enums their values (a fifth of the time of the general walk, per row of a large comparison)."""
    d = shallow_dict(row)
    for key, value in d.items():
        if isinstance(value, float) and not isfinite(value):
            d[key] = None
    d["verdict"] = row.verdict.value
    d["direction"] = row.direction.value
    return d


def _side(label: str, side: dict[str, Any]) -> dict[str, Any]:
    return {
        "label": label,
        "run_id": side.get("run_id"),
        "git": side.get("git"),
        "fingerprint": json_safe(side.get("fingerprint")),
    }


def comparison_to_dict(comparison: Comparison, created_at: str | None = None) -> dict[str, Any]:
    counts = {v.value: sum(1 for r in comparison.rows if r.verdict is v) for v in Verdict}
    return {
        **COMPARISON.header(),
        "created_at": created_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "mode": comparison.mode,
        "baseline": _side(comparison.baseline_label, comparison.baseline_run),
        "candidate": _side(comparison.candidate_label, comparison.candidate_run),
        "verdict": {"gate": "fail" if comparison.failing else "pass", "counts": {k: n for k, n in counts.items() if n}},
        "rows": [_row_to_dict(r) for r in comparison.rows],
        "warnings": list(comparison.warnings),
        "settings": json_safe(comparison.settings),
    }


def dump_comparison(comparison: Comparison, path: Path) -> None:
    """Write atomically (a reader never sees half a file)."""
    write_json_document(comparison_to_dict(comparison), path, indent=2)


_ROW_FIELDS = {f.name for f in fields(MetricComparison)}


def _row(d: dict[str, Any]) -> MetricComparison:
    kwargs = {k: v for k, v in d.items() if k in _ROW_FIELDS}
    kwargs["verdict"] = Verdict(d["verdict"])
    kwargs["direction"] = Direction(d.get("direction", "lower"))
    return MetricComparison(**kwargs)


def parse_comparison(doc: Any, source: str = "<comparison>") -> Comparison:
    return _decode(COMPARISON.load(doc, source))


def load_comparison(path: Path) -> Comparison:
    with gc_paused():
        return _decode(COMPARISON.read(path))


def _decode(doc: dict[str, Any]) -> Comparison:
    def side(key: str) -> dict[str, Any]:
        s = doc[key]
        return {"run_id": s.get("run_id"), "git": s.get("git"), "fingerprint": s.get("fingerprint")}

    return Comparison(
        baseline_label=doc["baseline"]["label"],
        candidate_label=doc["candidate"]["label"],
        rows=tuple(_row(r) for r in doc["rows"]),
        warnings=tuple(doc["warnings"]),
        mode=doc["mode"],
        baseline_run=side("baseline"),
        candidate_run=side("candidate"),
        settings=doc["settings"],
    )
