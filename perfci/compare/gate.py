"""The gate: from verdicts and run errors to the exit code of the CLI contract (docs/architecture.md)."""

from __future__ import annotations

from enum import IntEnum

from perfci.format.model import CaseStatus, Comparison, RunResult, Verdict


class ExitCode(IntEnum):
    OK = 0
    REGRESSION = 1
    USAGE = 2
    FAILED = 3


def gate(comparison: Comparison | None, run: RunResult | None = None, fail_on_error: bool = True) -> ExitCode:
    """1 on any regression not covered by a declared expected change (and, when the comparison's settings say
    `fail_on = "slower"`, on any such `slower` row); else 3 when workloads failed (if `fail_on_error`); else 0."""
    if comparison is not None and comparison.failing:
        return ExitCode.REGRESSION
    errored = run is not None and any(c.status is CaseStatus.ERROR for c in run.cases)
    if comparison is not None:
        errored = errored or any(r.verdict is Verdict.ERROR for r in comparison.rows)
    return ExitCode.FAILED if errored and fail_on_error else ExitCode.OK
