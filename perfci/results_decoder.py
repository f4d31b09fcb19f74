"""The fast way in for a results file of the current version: msgspec checks and decodes it in C.

Two passes over the bytes, each one `msgspec.json.Decoder`:

1. the check: typed structs that mirror the results JSON Schema (`results-v<SCHEMA_VERSION>.schema.json`) field
   by field, with its bounds, patterns and closed objects (`forbid_unknown_fields`). The two open-ended objects
   whose known keys have types (the fingerprint and a round's telemetry) are read as plain objects and then go
   through the schema's own compiled check (jsoncheck.py) for their definition;
2. the build: the model's own dataclasses (`Round`, `Metric`, `CaseError`, `GitInfo`) decoded directly, and one
   `CaseResult` per case made from them.

Like jsoncheck.py, this is a *conservative* fast path: it accepts only documents the JSON Schema accepts and
stays silent on every other one (`decode_results` returns None). The caller (schema.load_results) then reads the
file the usual way (orjson or json, migration, validation), so a bad file, an older version or anything this
path does not handle is refused or read exactly as before. docs/results-format.md ("Reading") has the costs.

The one difference in what is built: a JSON integer where the model holds a float (a sample, a metric's value,
a warm-up time) is read as that float (`1` as `1.0`), as the model's annotations say.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct

from perfci.jsoncheck import compile_schema
from perfci.model import CaseError, CaseResult, CaseSpec, CaseStatus, GitInfo, Metric, ParamValue, Round, RunResult

VERSION = 2  # the results version these structs mirror (schema.SCHEMA_VERSION; a test keeps them equal)

# --- pass 1: the check (results-v2.schema.json, field by field) -------------------------------------------------

_Seconds = Annotated[float, Meta(ge=1e-12, le=1e7)]  # "$defs/seconds"
_Number = int | float  # "number": an integer stays an integer here (only the check reads these)
_NonEmpty = Annotated[str, Meta(min_length=1)]
_Utc = Annotated[str, Meta(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$")]
_Open = dict[str, Any]  # an object checked afterwards by the schema's compiled check of its definition


class _RoundCheck(Struct, forbid_unknown_fields=True):
    index: Annotated[int, Meta(ge=0)]
    pid: int
    iterations: Annotated[int, Meta(ge=1)]
    samples: Annotated[list[_Seconds], Meta(min_length=1)]
    warmup_s: Annotated[int, Meta(ge=0)] | Annotated[float, Meta(ge=0)]
    stop_reason: str
    threads: int
    peak_rss_bytes: int | None = None
    rss_increase_bytes: int | None = None
    peak_device_bytes: int | None = None
    telemetry: _Open = {}  # absent: {} (a fresh one each time); null is refused, as by the schema


class _MetricCheck(Struct, forbid_unknown_fields=True):
    name: str
    unit: str
    direction: Literal["lower", "higher"]
    value: _Number
    low: _Number | None = None
    high: _Number | None = None
    confidence: _Number | None = None
    note: str = ""


class _ErrorCheck(Struct, forbid_unknown_fields=True):
    kind: Literal["raised", "crash", "timeout", "oom", "skipped", "infrastructure", "check"]
    message: str
    round_index: int | None = None


class _CaseCheck(Struct, forbid_unknown_fields=True):
    id: _NonEmpty
    workload: _NonEmpty
    params: dict[str, str | int | float | bool]
    device: _NonEmpty
    status: Literal["ok", "error", "skipped"]
    rounds: list[_RoundCheck]
    metrics: list[_MetricCheck]
    errors: list[_ErrorCheck]
    source: str = ""
    suite: str = ""
    tags: list[str] = []
    flops: _Number | None = None
    bytes: _Number | None = None


class _GitCheck(Struct, forbid_unknown_fields=True):
    commit: str | None
    branch: str | None
    dirty: bool | None


class _RunCheck(Struct, forbid_unknown_fields=True):
    schema: Literal["perfci.results"]
    schema_version: Literal[2]
    run_id: _NonEmpty
    started_at: _Utc
    finished_at: _Utc
    fingerprint: _Open
    git: _GitCheck | None
    settings: _Open
    cases: list[_CaseCheck]


# --- pass 2: the build (the model's dataclasses; a case's spec fields flat, as in the file) ---------------------


class _CaseDoc(Struct):
    workload: str
    params: dict[str, ParamValue]
    device: str
    status: CaseStatus
    rounds: tuple[Round, ...]
    metrics: tuple[Metric, ...]
    errors: tuple[CaseError, ...]
    source: str = ""
    suite: str = ""
    tags: tuple[str, ...] = ()
    flops: int | float | None = None
    bytes: int | float | None = None


class _RunDoc(Struct):
    run_id: str
    started_at: str
    finished_at: str
    fingerprint: dict[str, Any]
    git: GitInfo | None
    settings: dict[str, Any]
    cases: list[_CaseDoc]


@cache
def _decoders() -> tuple[msgspec.json.Decoder[_RunCheck], msgspec.json.Decoder[_RunDoc]]:
    return msgspec.json.Decoder(_RunCheck), msgspec.json.Decoder(_RunDoc)


@cache
def _definition_check(schema: Callable[[], dict[str, Any]], name: str) -> Callable[[Any], bool]:
    """The compiled check of one `$defs` entry of the results JSON Schema (its references resolved in it)."""
    root = schema()
    return compile_schema({**root["$defs"][name], "$defs": root["$defs"]})


class Checked(Struct):
    """What the semantic checks read of a document that passed the check: its times, and per case its id and
    round indexes."""

    started_at: str
    finished_at: str
    cases: list[tuple[str, list[int]]]


SHALLOW_LEVELS = 256  # an open object nested deeper goes the usual way (which reads 1,024 levels, refuses more)


def _shallow(value: Any) -> bool:
    """Whether an open object (read as plain data) nests fewer than SHALLOW_LEVELS levels. The structs around
    it add a handful; deeper documents are left to the usual path, which refuses them past 1,024 levels as the
    parser does (msgspec reads deeper, and later code could not recurse through them)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth >= SHALLOW_LEVELS:
            return False
        items = node.values() if type(node) is dict else node if type(node) is list else ()
        stack.extend((v, depth + 1) for v in items if type(v) is dict or type(v) is list)
    return True


def check_results(data: bytes, schema: Callable[[], dict[str, Any]]) -> Checked | None:
    """Pass 1: what the semantic checks read of `data`, where the check accepts it (None where this fast path
    does not: the module docstring). `schema` gives the current version's JSON Schema (for the open objects)."""
    check, _ = _decoders()
    try:
        doc = check.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    fingerprint_ok = _definition_check(schema, "fingerprint")
    telemetry_ok = _definition_check(schema, "telemetry")
    if not (fingerprint_ok(doc.fingerprint) and _shallow(doc.fingerprint) and _shallow(doc.settings)):
        return None
    for c in doc.cases:
        for r in c.rounds:
            if r.telemetry and not (telemetry_ok(r.telemetry) and _shallow(r.telemetry)):
                return None
    return Checked(doc.started_at, doc.finished_at, [(c.id, [r.index for r in c.rounds]) for c in doc.cases])


def build_results(data: bytes) -> RunResult | None:
    """Pass 2: the run, decoded into the model (None where it does not decode: only a file pass 1 refused)."""
    _, build = _decoders()
    try:
        run = build.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, TypeError, ValueError, RecursionError):
        return None
    cases = tuple(
        CaseResult(
            spec=CaseSpec(c.workload, c.params, c.device, c.source, c.tags, c.suite),
            status=c.status,
            rounds=c.rounds,
            metrics=c.metrics,
            errors=c.errors,
            flops=c.flops,
            bytes=c.bytes,
        )
        for c in run.cases
    )
    return RunResult(run.run_id, run.started_at, run.finished_at, run.fingerprint, run.git, run.settings, cases)


def decode_results(data: bytes, schema: Callable[[], dict[str, Any]]) -> tuple[RunResult, Checked] | None:
    """Both passes, one after the other: the run and what the semantic checks read, or None where this fast
    path does not accept `data`."""
    checked = check_results(data, schema)
    if checked is None:
        return None
    run = build_results(data)
    return None if run is None else (run, checked)
