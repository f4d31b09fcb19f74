"""The results format: one JSON document per run, `{"schema": "perfci.results", "schema_version": 3, ...}`,
defined by the model's `RunResult` (perfci/format/model.py) with the header's two fields (`RunResultFile`), read and
written by perfci/format/codec.py.

Versions:

| version | change                                                        | migration to the next |
|---------|---------------------------------------------------------------|-----------------------|
| 1       | the first published format                                    | identity (see below)  |
| 2       | a metric's optional `note`                                    | identity              |
| 3       | a round's optional `device` (the device clock of CUDA cases)  | (current)             |

Version 1 files of perfci 0.x already carried `note` without a version bump, so version 1 reads unchanged and is
checked as version 2; version 2 files have no round with `device`, so they read unchanged as version 3. What
types cannot say is checked after decoding (`check_results_semantics`): the two times
are real dates, case ids are unique, and a case's round indexes are unique (per-round values are keyed by index).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import msgspec

from perfci.errors import ResultsFormatError
from perfci.format.codec import DocumentFormat
from perfci.format.model import RunResult

SCHEMA_NAME = "perfci.results"
SCHEMA_VERSION = 3

# The years a run's time may lie in: from the epoch (an imported file without a time) to the end of pandas'
# nanosecond timestamps (2262), which `perfci history export` turns the times into.
TIME_YEARS = (1970, 2261)


def check_results_semantics(run: RunResult, source: str) -> None:
    for key, value in (("started_at", run.started_at), ("finished_at", run.finished_at)):
        check_time(value, key, "results", source)
    ids = Counter(c.id for c in run.cases)
    if len(ids) < len(run.cases):
        first = next(i for i, n in ids.items() if n > 1)
        raise ResultsFormatError(f"{source}: invalid results file: case id {first!r} appears more than once.")
    for i, case in enumerate(run.cases):
        indexes = [r.index for r in case.rounds]
        if len(set(indexes)) < len(indexes):
            raise ResultsFormatError(
                f"{source}: invalid results file at cases/{i}/rounds: two rounds of {case.id!r} have the same index."
            )


def check_time(value: str, key: str, kind: str, source: str) -> None:
    """A UTC time of the format's shape that is also a real date and time in TIME_YEARS (2026-02-30 or
    0000-00-00 have the shape, and would make the history export fail)."""
    try:
        year = datetime.fromisoformat(value).year
    except ValueError:
        year = 0
    if not TIME_YEARS[0] <= year <= TIME_YEARS[1]:
        raise ResultsFormatError(
            f"{source}: invalid {kind} file at {key}: {value[:40]!r} is not a date and time between "
            f"{TIME_YEARS[0]} and {TIME_YEARS[1]}."
        )


class RunResultFile(RunResult, frozen=True, kw_only=True):
    """A results file: the run after its header (the writer puts the header first)."""

    schema: Literal["perfci.results"]
    schema_version: int


RESULTS: DocumentFormat[RunResult] = DocumentFormat(
    SCHEMA_NAME,
    "results",
    SCHEMA_VERSION,
    RunResult,
    RunResultFile,
    migrations={1: None, 2: None},
    semantic=check_results_semantics,
)


def json_schema() -> dict[str, Any]:
    """The results format's JSON Schema (the current version), generated from its definition."""
    return RESULTS.json_schema()


def load_results(path: Path) -> RunResult:
    """A results file, checked and decoded; any problem is one ResultsFormatError naming the file and place."""
    return RESULTS.read(path)


def decode_results(data: bytes, source: str) -> RunResult:
    return RESULTS.decode(data, source)


def dump_results(run: RunResult, path: Path) -> None:
    """Write atomically: a reader never sees half a file."""
    RESULTS.write(run, path)


def run_to_dict(run: RunResult) -> dict[str, Any]:
    """The document as plain JSON values (non-finite numbers as None)."""
    doc: dict[str, Any] = msgspec.json.decode(RESULTS.encode(run))
    return doc
