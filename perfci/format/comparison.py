"""Saved comparisons: the versioned JSON format of a `Comparison`, written as `comparison.json`.

`perfci compare` and `perfci ab` write `comparison.json` next to their report when given an output folder;
`perfci report` renders it again. Every reader goes through `load_comparison`/`parse_comparison`, which read it as
the versioned document `COMPARISON` (perfci/format/codec.py: format check, migrations from older versions, the check
against the definition below, `ComparisonFile`); any problem is a `ResultsFormatError` (exit code 2).

Format, version 2 (documented in docs/compare.md):

    {
      "schema": "perfci.comparison", "schema_version": 2,
      "created_at": "2026-11-30T01:00:00.000000Z",          # UTC ISO-8601
      "mode": "paired" | "unpaired",                        # same-machine A/B, or two separate result files
      "baseline":  {"label": str, "run_id": str|null, "git": {...}|null, "fingerprint": {...}|null},
      "candidate": {"label": str, "run_id": str|null, "git": {...}|null, "fingerprint": {...}|null},
      "verdict": {"gate": "pass"|"fail", "counts": {"regression": 1, "unchanged": 12, ...}},
      "rows": [ {                                           # one per case and metric (MetricComparison)
          "case_id": str, "metric": str, "verdict": "regression"|"improvement"|"slower"|"faster"|"grew"|"shrank"
                                                            |"unchanged"|"inconclusive"|"new"|"missing"|"error",
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
expected change (and `slower` and `grew` rows too when settings.fail_on is "slower"). `grew`/`shrank` are memory's
words for a certain change below the threshold, as `slower`/`faster` are a timed metric's.

Version 1 had no `slower`/`faster` verdicts and no `mdc`, and its `unchanged` meant "no
change of the threshold was seen", not "equivalence established". It migrates to version 2 with its rows as they
were and a warning that says so.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import msgspec

from perfci.format.codec import DocumentFormat
from perfci.format.model import Comparison, Count, MetricComparison, Record, RunResult, Verdict, dataclass_api

SCHEMA_NAME = "perfci.comparison"
SCHEMA_VERSION = 2
V1_WARNING = (
    "saved by an older perfci (comparison version 1): its 'unchanged' means no change of the threshold was seen, "
    "not that equivalence was established; small established changes were not named (slower/faster), and no "
    "minimum detectable change was recorded"
)


@dataclass_api
class Side(Record, frozen=True, forbid_unknown_fields=False, gc=False):
    """One side of the comparison: its label and what identifies its run (a key it does not name is passed
    over)."""

    label: str
    run_id: str | None
    git: dict[str, Any] | None
    fingerprint: dict[str, Any] | None


@dataclass_api
class GateSummary(Record, frozen=True, forbid_unknown_fields=False, gc=False):
    """The gate's outcome and the rows by verdict (a key it does not name is passed over)."""

    gate: Literal["pass", "fail"]
    counts: dict[str, Count]


@dataclass_api
class ComparisonFile(Record, frozen=True, gc=False):
    """The saved comparison's document (after its header)."""

    created_at: str
    mode: Literal["unpaired", "paired"]
    baseline: Side
    candidate: Side
    verdict: GateSummary
    rows: tuple[MetricComparison, ...]
    warnings: tuple[str, ...]
    settings: dict[str, Any] = msgspec.field(default_factory=dict)


class ComparisonDocument(ComparisonFile, frozen=True, kw_only=True):
    """The saved comparison's whole document: its header, then `ComparisonFile`'s fields."""

    schema: Literal["perfci.comparison"]
    schema_version: int


def _v1_to_v2(doc: dict[str, Any]) -> dict[str, Any]:
    """Rows as they were (v1's verdicts are a subset of v2's); a warning that the older vocabulary applies."""
    warnings = doc.get("warnings")
    return {**doc, "warnings": [*warnings, V1_WARNING]} if isinstance(warnings, list) else doc


COMPARISON: DocumentFormat[ComparisonFile] = DocumentFormat(
    SCHEMA_NAME, "comparison", SCHEMA_VERSION, ComparisonFile, ComparisonDocument, migrations={1: _v1_to_v2}
)


def run_side(run: RunResult | None) -> dict[str, Any]:
    """What a comparison keeps of each run: id, git and fingerprint."""
    if run is None:
        return {}
    return {
        "run_id": run.run_id,
        "git": msgspec.structs.asdict(run.git) if run.git else None,
        "fingerprint": run.fingerprint,
    }


def _side(label: str, side: dict[str, Any]) -> Side:
    return Side(label, side.get("run_id"), side.get("git"), side.get("fingerprint"))


def to_file(comparison: Comparison, created_at: str | None = None) -> ComparisonFile:
    counts = {v.value: sum(1 for r in comparison.rows if r.verdict is v) for v in Verdict}
    return ComparisonFile(
        created_at=created_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        mode="paired" if comparison.mode == "paired" else "unpaired",
        baseline=_side(comparison.baseline_label, comparison.baseline_run),
        candidate=_side(comparison.candidate_label, comparison.candidate_run),
        verdict=GateSummary("fail" if comparison.failing else "pass", {k: n for k, n in counts.items() if n}),
        rows=comparison.rows,
        warnings=comparison.warnings,
        settings=comparison.settings,
    )


def comparison_bytes(comparison: Comparison, created_at: str | None = None) -> bytes:
    """The saved comparison's document (compact JSON; non-finite numbers as null)."""
    return COMPARISON.encode(to_file(comparison, created_at))


def comparison_to_dict(comparison: Comparison, created_at: str | None = None) -> dict[str, Any]:
    """The saved comparison's document as plain JSON values."""
    doc: dict[str, Any] = msgspec.json.decode(comparison_bytes(comparison, created_at))
    return doc


def dump_comparison(comparison: Comparison, path: Path) -> None:
    """Write atomically (a reader never sees half a file)."""
    COMPARISON.write(to_file(comparison), path)


def decode_comparison(data: bytes, source: str) -> Comparison:
    return to_comparison(COMPARISON.decode(data, source))


def to_comparison(doc: ComparisonFile) -> Comparison:
    def side(s: Side) -> dict[str, Any]:
        return {"run_id": s.run_id, "git": s.git, "fingerprint": s.fingerprint}

    return Comparison(
        baseline_label=doc.baseline.label,
        candidate_label=doc.candidate.label,
        rows=doc.rows,
        warnings=doc.warnings,
        mode=doc.mode,
        baseline_run=side(doc.baseline),
        candidate_run=side(doc.candidate),
        settings=doc.settings,
    )
