"""Reading documents in tests: from parsed JSON values (a test's hand-edited document) and from paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfci.format.comparison import COMPARISON, to_comparison
from perfci.format.model import CaseResult, CaseSpec, Comparison, RunResult
from perfci.format.schema import RESULTS


def parse_results(doc: Any, source: str = "<results>") -> RunResult:
    return RESULTS.load(doc, source)


def parse_comparison(doc: Any, source: str = "<comparison>") -> Comparison:
    return to_comparison(COMPARISON.load(doc, source))


def load_comparison(path: Path) -> Comparison:
    return to_comparison(COMPARISON.read(path))


def with_spec(case: CaseResult, spec: CaseSpec) -> CaseResult:
    """`case`'s outcome for another case."""
    return CaseResult.of(spec, case.status, case.rounds, case.metrics, case.errors, case.flops, case.bytes)
