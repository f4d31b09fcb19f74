"""Saved comparisons: the versioned JSON format of a `Comparison`, written as `comparison.json`.

`perfci compare` and `perfci ab` write `comparison.json` next to their report when given an output folder;
`perfci report` renders it again. Every reader goes through `load_comparison`/`parse_comparison`, which validate
against `perfci/schemas/comparison-v1.schema.json`; any problem is a `ResultsFormatError` (exit code 2).

Format, version 1 (documented in docs/compare.md):

    {
      "schema": "perfci.comparison", "schema_version": 1,
      "created_at": "2026-11-30T01:00:00.000000Z",          # UTC ISO-8601
      "mode": "paired" | "unpaired",                        # same-machine A/B, or two separate result files
      "baseline":  {"label": str, "run_id": str|null, "git": {...}|null, "fingerprint": {...}|null},
      "candidate": {"label": str, "run_id": str|null, "git": {...}|null, "fingerprint": {...}|null},
      "verdict": {"gate": "pass"|"fail", "counts": {"regression": 1, "unchanged": 12, ...}},
      "rows": [ {                                           # one per case and metric (MetricComparison)
          "case_id": str, "metric": str, "verdict": "regression"|"improvement"|"unchanged"|"inconclusive"
                                                            |"new"|"missing"|"error",
          "unit": str, "baseline": num|null, "candidate": num|null,
          "ratio": num|null,                                # candidate / baseline
          "ratio_low": num|null, "ratio_high": num|null,    # two-sided interval of the ratio at `confidence`
          "bound": num|null,                                # one-sided bound on the verdict's "worse" side
          "threshold": num|null,                            # practical threshold used (fraction, 0.03 = 3%)
          "noise": num|null,                                # standard error of log(ratio)
          "direction": "lower"|"higher", "method": "paired"|"unpaired"|"tolerance"|"",
          "confidence": num|null, "n_baseline": int|null, "n_candidate": int|null,
          "note": str, "expected": str                      # expected: reason of a declared expected change
      } ],
      "warnings": [str],                                    # e.g. fingerprint mismatches
      "settings": {...}                                     # decision settings (alpha, looks, thresholds)
    }

Non-finite numbers are written as null. The gate in "verdict" counts only regressions not covered by a declared
expected change.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from perfci.errors import ResultsFormatError
from perfci.model import Comparison, Direction, MetricComparison, RunResult, Verdict
from perfci.schema import json_safe, read_json_document

SCHEMA_NAME = "perfci.comparison"
SCHEMA_VERSION = 1


@cache
def comparison_json_schema(version: int = SCHEMA_VERSION) -> dict[str, Any]:
    text = resources.files("perfci.schemas").joinpath(f"comparison-v{version}.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def run_side(run: RunResult | None) -> dict[str, Any]:
    """What a comparison keeps of each run: id, git and fingerprint."""
    if run is None:
        return {}
    return {"run_id": run.run_id, "git": asdict(run.git) if run.git else None, "fingerprint": run.fingerprint}


def _row_to_dict(row: MetricComparison) -> dict[str, Any]:
    d: dict[str, Any] = json_safe(asdict(row))
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
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
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
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(comparison_to_dict(comparison), indent=1, allow_nan=False) + "\n", "utf-8")
    tmp.replace(path)


def _validate(doc: dict[str, Any], source: str) -> None:
    validator = jsonschema.Draft202012Validator(comparison_json_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "<top>"
        raise ResultsFormatError(f"{source}: invalid comparison file at {where}: {error.message}")


_ROW_FIELDS = {f.name for f in fields(MetricComparison)}


def _row(d: dict[str, Any]) -> MetricComparison:
    kwargs = {k: v for k, v in d.items() if k in _ROW_FIELDS}
    kwargs["verdict"] = Verdict(d["verdict"])
    kwargs["direction"] = Direction(d.get("direction", "lower"))
    return MetricComparison(**kwargs)


def parse_comparison(doc: Any, source: str = "<comparison>") -> Comparison:
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA_NAME:
        raise ResultsFormatError(f'{source}: not a perfci comparison file (missing "schema": "{SCHEMA_NAME}").')
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ResultsFormatError(
            f"{source}: comparison schema_version {version!r} is not supported (this perfci reads {SCHEMA_VERSION}).",
            hint="upgrade perfci to read newer comparison files",
        )
    _validate(doc, source)

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


def load_comparison(path: Path) -> Comparison:
    return parse_comparison(read_json_document(path, "comparison"), str(path))
