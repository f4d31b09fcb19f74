"""Versioned JSON documents (one mechanism for every format perfci writes), and the results format.

A document names its format and version in two fields, `"schema"` and `"schema_version"`. A `DocumentFormat`
holds what a reader needs: the name, the version written, the versions read, the migrations that bring an
older document up to date (from version N to N+1, applied in order), and each version's JSON Schema (shipped in
`perfci/schemas/`). Every reader goes through `DocumentFormat.load`: not this format, an unknown version, or a
document that fails validation is one clear `ResultsFormatError`. The results format is `RESULTS` below; the
saved comparison (compare/saved.py) is the other.

Validation: each shipped JSON Schema is compiled once into a Python predicate (perfci/jsoncheck.py) that
accepts only documents the schema accepts; a document it does not accept goes to the `jsonschema` library, which
decides and words the error. Deliberate departure from DESIGN.md's "standard library only" for this layer:
`jsonschema` is the reference, imported only when a document needs it.
"""

from __future__ import annotations

import copy
import gc
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import MISSING, asdict, dataclass, field, fields
from datetime import datetime
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from perfci.errors import ResultsFormatError
from perfci.jsoncheck import Check, compile_schema
from perfci.model import (
    CaseError,
    CaseResult,
    CaseSpec,
    CaseStatus,
    Direction,
    GitInfo,
    Metric,
    Round,
    RunResult,
)

if TYPE_CHECKING:
    import jsonschema

Migration = Callable[[dict[str, Any]], dict[str, Any]]


@cache
def shipped_schema(filename: str) -> dict[str, Any]:
    """A JSON Schema shipped in perfci/schemas/."""
    text = resources.files("perfci.schemas").joinpath(filename).read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def shipped_schemas(stem: str) -> Callable[[int], dict[str, Any]]:
    """A version's JSON Schema from perfci/schemas/`<stem>-v<version>.schema.json`."""
    return lambda version: shipped_schema(f"{stem}-v{version}.schema.json")


@dataclass(frozen=True, eq=False)
class DocumentFormat:
    """One versioned JSON document format."""

    name: str  # the document's "schema" field, e.g. "perfci.results"
    kind: str  # what messages call such a file: "results", "comparison"
    version: int  # the version this perfci writes
    json_schema: Callable[[int], dict[str, Any]]  # a version's JSON Schema
    # from version N (the key) to N+1, one for every version read but the current one; `migrate` sets the new
    # "schema_version", a migration changes only the content
    migrations: Mapping[int, Migration] = field(default_factory=dict)
    oldest: int = 1  # the oldest version this perfci reads
    # versions whose migration changes no nested content (an identity, or top-level keys only): a document of such
    # a version is not deep-copied before migrating (a large results file would pay seconds for the copy)
    shallow: frozenset[int] = frozenset()
    # what a JSON Schema cannot say (a time's calendar, ids unique across a list): run on a valid document
    semantic: Callable[[dict[str, Any], str], None] | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.oldest <= self.version:
            raise ValueError(f"{self.name}: oldest version {self.oldest} is not in 1..{self.version}")
        missing = [v for v in range(self.oldest, self.version) if v not in self.migrations]
        if missing:
            raise ValueError(f"{self.name}: no migration from version(s) {missing} to the next")

    @property
    def versions(self) -> tuple[int, ...]:
        """The versions this perfci reads, oldest first."""
        return tuple(range(self.oldest, self.version + 1))

    def header(self) -> dict[str, Any]:
        """The two fields that open a document written now."""
        return {"schema": self.name, "schema_version": self.version}

    def load(self, doc: Any, source: str) -> dict[str, Any]:
        """`doc` (parsed JSON) checked to be of this format, migrated to the current version and validated."""
        if not isinstance(doc, dict) or doc.get("schema") != self.name:
            raise ResultsFormatError(
                f'{source}: not a perfci {self.kind} file (missing "schema": "{self.name}").',
            )
        current = self.migrate(doc, source)
        self.validate(current, source)
        if self.semantic is not None:
            self.semantic(current, source)
        return current

    def read(self, path: Path) -> dict[str, Any]:
        """A file of this format, loaded (see `load`)."""
        return self.load(read_json_document(path, self.kind), str(path))

    def migrate(self, doc: dict[str, Any], source: str) -> dict[str, Any]:
        """`doc` brought to the current version (a new dict where anything changed; `doc` is left alone)."""
        version = doc.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise ResultsFormatError(f"{source}: 'schema_version' is missing or not an integer.")
        if version not in self.versions:
            reads = f"{self.oldest}..{self.version}" if self.oldest < self.version else str(self.version)
            raise ResultsFormatError(
                f"{source}: {self.kind} schema_version {version} is not supported (this perfci reads {reads}).",
                hint=f"upgrade perfci to read newer {self.kind} files" if version > self.version else None,
            )
        if any(v not in self.shallow for v in range(version, self.version)):
            doc = copy.deepcopy(doc)
        while version < self.version:
            doc = {**self.migrations[version](doc), "schema_version": version + 1}
            version += 1
        return doc

    def validate(self, doc: dict[str, Any], source: str) -> None:
        """Check a current-version document against its JSON Schema; the error names the place.

        Once per document, by the schema compiled into one predicate (perfci/jsoncheck.py). It accepts only
        documents the JSON Schema accepts; when it does not accept one, `jsonschema` decides and words the
        error, so a bad file is refused exactly as by `jsonschema` alone, at a fraction of the cost for a good
        one (docs/results-format.md, "Validation")."""
        if self._check(doc):
            return
        from jsonschema.exceptions import best_match  # lazily: only a document the check did not accept needs it

        error = best_match(self._validator.iter_errors(doc))
        if error is not None:
            where = "/".join(map(_place, error.absolute_path)) or "<top>"
            raise ResultsFormatError(f"{source}: invalid {self.kind} file at {where}: {error.message}")

    @cached_property
    def _check(self) -> Check:
        return compile_schema(self.json_schema(self.version))

    @cached_property
    def _validator(self) -> jsonschema.Draft202012Validator:
        from jsonschema import Draft202012Validator

        return Draft202012Validator(self.json_schema(self.version))


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a large document is parsed and decoded, and what exists then moved
    out of its reach (`gc.freeze`) before it is on again. The million containers a 5,000-case file makes would
    otherwise set off collections that scan them again and again, during the load (a third of its time) and
    after it (a second of a comparison). A parsed document holds no cycles: reference counting frees it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def read_json_document(path: Path, kind: str) -> Any:
    """Parse a JSON file, turning every way it can be unreadable into one clear ResultsFormatError."""

    def text() -> str:
        try:
            return Path(path).read_text("utf-8")
        except FileNotFoundError:
            raise ResultsFormatError(f"{path}: {kind} file not found.") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ResultsFormatError(f"{path}: cannot read {kind} file ({exc}).") from None

    try:
        data = Path(path).read_bytes()
    except OSError:
        data = None  # `text` words it
    return parse_json_bytes(data, text, str(path), kind)


def parse_json_bytes(data: bytes | None, text: Callable[[], str], source: str, kind: str) -> Any:
    """A file's bytes parsed as `parse_json_text` parses its text, by orjson (three times as fast as Python's
    json for a large results file) wherever orjson is sure to give the same document; otherwise, and for every
    file orjson refuses, `text()` (the file read again as text) goes to `parse_json_text`, so a bad file is
    refused with the same words as before (docs/results-format.md, "Parsing")."""
    if data is not None and _orjson_reads_as_json(data):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # not valid UTF-8 or JSON, a NaN, an infinity, a lone surrogate, nesting over 1024: reworded below
    return parse_json_text(text(), source, kind)


_DIGIT_RUN = b"0" * 19
# digits become "0"; what may come just before a number literal (":", ",", "[", whitespace, a minus sign) ":"
_BEFORE_NUMBER = bytes.maketrans(b"123456789[, \n\t\r-", b"000000000" + b":" * 7)


def _orjson_reads_as_json(data: bytes) -> bool:
    """False when `data` may hold an integer literal of 19 digits or more, which orjson reads as a float (past
    64 bits; json.loads: an int). Such a literal starts the text or follows one of `:,[`, whitespace or a minus
    sign; so does any number, and nothing else that runs 19 digits long but a string such as "0000000000000000000"
    (which only sends the file to the json path: time, not a difference)."""
    digits = data.translate(_BEFORE_NUMBER)
    return not digits.startswith(_DIGIT_RUN) and b":" + _DIGIT_RUN not in digits


# The years a run's time may lie in: from the epoch (an imported file without a time) to the end of pandas'
# nanosecond timestamps (2262), which `perfci history export` turns the times into.
TIME_YEARS = (1970, 2261)


def _check_results(doc: dict[str, Any], source: str) -> None:
    """A valid results document's times are real times, its case ids unique, and each case's round indexes
    unique (fuzzing: a second case with the same id was compared or ingested depending on the order of the two,
    and per-round values are keyed by index, so a round with a repeated index was dropped without a word)."""
    cases = [(c["id"], [r["index"] for r in c["rounds"]]) for c in doc["cases"]]
    check_results_semantics(doc["started_at"], doc["finished_at"], cases, source)


def check_results_semantics(started: str, finished: str, cases: list[tuple[str, list[int]]], source: str) -> None:
    """`_check_results` on what it reads: the two times, and each case's id and round indexes in file order."""
    for key, value in (("started_at", started), ("finished_at", finished)):
        _check_time(value, key, "results", source)
    ids = {case_id for case_id, _ in cases}
    if len(ids) < len(cases):
        counts = Counter(case_id for case_id, _ in cases)
        first = next(i for i, n in counts.items() if n > 1)
        raise ResultsFormatError(f"{source}: invalid results file: case id {first!r} appears more than once.")
    for i, (case_id, indexes) in enumerate(cases):
        if len(set(indexes)) < len(indexes):
            raise ResultsFormatError(
                f"{source}: invalid results file at cases/{i}/rounds: two rounds of {case_id!r} have the same index."
            )


def _check_time(value: str, key: str, kind: str, source: str) -> None:
    """A UTC time of the schema's shape that is also a real date and time in TIME_YEARS (fuzzing: 2026-13-45,
    2026-02-30 or 0000-00-00 passed the pattern, and made the history export fail with a traceback)."""
    try:
        year = datetime.fromisoformat(value).year
    except ValueError:
        year = 0
    if not TIME_YEARS[0] <= year <= TIME_YEARS[1]:
        raise ResultsFormatError(
            f"{source}: invalid {kind} file at {key}: {value[:40]!r} is not a date and time between "
            f"{TIME_YEARS[0]} and {TIME_YEARS[1]}."
        )


def _place(key: object) -> str:
    """A key or index as a step of a JSON path in a one-line message (control characters escaped)."""
    return repr(key)[1:-1] if isinstance(key, str) else str(key)


class _NonFinite(ValueError):
    """A NaN, an infinity, or a number beyond the range of a float, met while parsing."""


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(name)


def _checked_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise _NonFinite(literal if len(literal) < 40 else literal[:37] + "...")
    return value


def _checked_int(literal: str) -> int:
    if len(literal) > 300:  # beyond any float: no count, size or time perfci reads is that large
        raise _NonFinite(literal[:37] + "...")
    return int(literal)


# A number literal that parses to an infinity (or an integer beyond a float) has an exponent of 3 or more digits
# or 300 digits in a row. Only a text that holds one is parsed with the checking parsers above: the C scanner's
# own float parser is much faster for the millions of samples of a large file.
# Matching that pattern with a regular expression costs over a second for a 5,000-case file (a match is tried at
# every digit); `_may_hold_huge_number` finds a superset of it with C string methods in a tenth of that: digits
# become "0" and "E" "e", then a 300-digit run, or a digit, "e", an optional "+" and three digits. The exponent
# must follow a digit, as in a number: a string such as a run id "...-base20000" does not count.
_HUGE_NUMBER = re.compile(r"[0-9][eE]\+?0*[1-9][0-9]{2}|[0-9]{300}")  # what is looked for (tests)
_DIGITS_AND_E = bytes.maketrans(b"123456789E", b"000000000e")
_BIG_EXPONENT = re.compile(rb"0e\+?000")  # on translated text: a literal prefix, found fast


def _may_hold_huge_number(text: str) -> bool:
    """True for every text that `_HUGE_NUMBER` matches (and rarely for another: that only costs time)."""
    data = text.encode("utf-8", "surrogatepass").translate(_DIGITS_AND_E)
    return _BIG_EXPONENT.search(data) is not None or b"0" * 300 in data


class _Marker:
    def __init__(self, literal: str) -> None:
        self.literal = literal


def _mark_float(literal: str) -> Any:
    value = float(literal)
    return value if math.isfinite(value) else _Marker(literal)


def _non_finite_place(text: str) -> str:
    """The JSON path (`cases/0/rounds/1/samples/3`) of the first non-finite number in `text` (parsed again with
    markers; only an erroneous file pays for it)."""
    try:
        doc = json.loads(
            text,
            parse_constant=_Marker,
            parse_float=_mark_float,
            parse_int=lambda s: _Marker(s) if len(s) > 300 else int(s),
        )
    except (ValueError, RecursionError):
        return "<unknown>"
    stack: list[tuple[Any, tuple[str, ...]]] = [(doc, ())]
    while stack:
        node, where = stack.pop()
        if isinstance(node, _Marker):
            return "/".join(where) or "<top>"
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        stack.extend(reversed([(v, (*where, _place(k))) for k, v in items]))
    return "<unknown>"


MAX_NESTING = 1_024  # levels of nesting read: as far as orjson goes (it refuses deeper documents)


@contextmanager
def _nesting_limit() -> Iterator[None]:
    """Python's json module recurses once per level of nesting, as deep as the interpreter's recursion limit
    lets it (raised by the CLI: cli/__init__.py RECURSION_LIMIT). Parsing under a limit of MAX_NESTING levels
    above this frame refuses what orjson refuses, and what the code after the parse could not recurse through.
    The limit is only ever lowered here (a library caller's own limit stays the bound)."""
    depth, frame = 0, sys._getframe()
    while frame.f_back is not None:
        depth, frame = depth + 1, frame.f_back
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(min(before, depth + MAX_NESTING + 20))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def parse_json_text(text: str, source: str, kind: str) -> Any:
    """JSON text parsed; every way it can be unparsable, and any NaN, infinity or number beyond a float's range
    (which Python's json module would accept), is one ResultsFormatError naming `source` and the place."""
    huge = _may_hold_huge_number(text)
    try:
        with _nesting_limit():
            if huge:
                doc = json.loads(
                    text, parse_constant=_refuse_constant, parse_float=_checked_float, parse_int=_checked_int
                )
            else:
                doc = json.loads(text, parse_constant=_refuse_constant)
    except _NonFinite as exc:
        raise ResultsFormatError(
            f"{source}: invalid {kind} file at {_non_finite_place(text)}: {exc} is not a finite number.",
            hint="perfci reads only finite numbers",
        ) from None
    except json.JSONDecodeError as exc:
        raise ResultsFormatError(
            f"{source}: {kind} file is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "it may be truncated.",
        ) from None
    except RecursionError:
        raise ResultsFormatError(
            f"{source}: {kind} file nests deeper than {MAX_NESTING:,} levels, which perfci does not read."
        ) from None
    except ValueError as exc:  # an integer of thousands of digits
        raise ResultsFormatError(f"{source}: {kind} file cannot be parsed ({str(exc)[:200]}).") from None
    if _SURROGATE_ESCAPE.search(text) is not None:
        _refuse_lone_surrogates(doc, source, kind)
    return doc


# `\ud800`: JSON can escape half of a UTF-16 pair alone, which no UTF-8 file, report or database can then hold
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _refuse_lone_surrogates(doc: Any, source: str, kind: str) -> None:
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
        return
    except UnicodeEncodeError:
        pass
    stack: list[tuple[Any, tuple[str, ...]]] = [(doc, ())]
    where = "<unknown>"
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                where = "/".join(path) or "<top>"
                break
        elif isinstance(node, dict):
            stack.extend((v, (*path, _place(k))) for k, v in node.items())
            stack.extend((k, (*path, _place(k))) for k in node)
        elif isinstance(node, list):
            stack.extend((v, (*path, str(i))) for i, v in enumerate(node))
    raise ResultsFormatError(f"{source}: invalid {kind} file at {where}: a string holds a lone UTF-16 surrogate.")


def write_json_document(doc: dict[str, Any], path: Path, indent: int = 1) -> None:
    """Write atomically: a reader never sees half a file. Non-finite numbers must already be gone (`json_safe`).
    `indent=2` writes through `json_text` (orjson: a tenth of the time, for a large comparison)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    if indent == 2:
        tmp.write_text(json_text(doc) + "\n", "utf-8")
    else:
        tmp.write_text(json.dumps(doc, indent=indent, allow_nan=False) + "\n", "utf-8")
    tmp.replace(path)


def json_text(doc: Any) -> str:
    """`doc` as JSON indented by two spaces, non-ASCII characters as they are: what `json.dumps(doc, indent=2,
    ensure_ascii=False)` writes (numbers may be spelled differently: `1e-5` for `1e-05`), by orjson, in a tenth
    of the time of json's indenting encoder (pure Python). Where orjson cannot write `doc` (an integer beyond 64
    bits, a key that is not a string), by json. A NaN or an infinity becomes null (json_safe does that anyway)."""
    try:
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode("utf-8")
    except TypeError:
        return json.dumps(doc, indent=2, ensure_ascii=False)


# The results format. Version 2 (issue #20) allows the optional `note` of a metric, which version 1 files of
# perfci 0.x already carried without a version bump; a version 1 file reads unchanged (an identity migration).
SCHEMA_NAME = "perfci.results"
SCHEMA_VERSION = 2


def _results_v1_to_v2(doc: dict[str, Any]) -> dict[str, Any]:
    return doc


RESULTS = DocumentFormat(
    SCHEMA_NAME,
    "results",
    SCHEMA_VERSION,
    shipped_schemas("results"),
    {1: _results_v1_to_v2},
    shallow=frozenset({1}),
    semantic=_check_results,
)


def json_schema(version: int = SCHEMA_VERSION) -> dict[str, Any]:
    """The results format's JSON Schema of `version`."""
    return RESULTS.json_schema(version)


def json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if _finite_floats(value):
            return list(value)  # raw samples: checked in bulk, not one by one
        return [json_safe(v) for v in value]
    if hasattr(value, "value") and isinstance(value, Direction | CaseStatus):
        return value.value
    return value


def _finite_floats(xs: list[Any] | tuple[Any, ...]) -> bool:
    """Whether every item is a float and finite (then so is their sum; a NaN or an infinity makes it not)."""
    return bool(xs) and set(map(type, xs)) == {float} and math.isfinite(sum(xs))


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def shallow_dict(obj: Any) -> dict[str, Any]:
    """A dataclass's fields as a dict, values as they are (`asdict` without its deep copy: a fraction of the
    time for a run's rounds); `json_safe` then makes the values JSON."""
    return {name: getattr(obj, name) for name in _field_names(type(obj))}


def case_to_dict(case: CaseResult) -> dict[str, Any]:
    return {
        "id": case.id,
        "workload": case.spec.workload,
        "params": dict(case.spec.params),
        "device": case.spec.device,
        "source": case.spec.source,
        "suite": case.spec.suite,
        "tags": list(case.spec.tags),
        "status": case.status.value,
        "flops": case.flops,
        "bytes": case.bytes,
        "rounds": [json_safe(shallow_dict(r)) for r in case.rounds],
        "metrics": [_metric_to_dict(m) for m in case.metrics],
        "errors": [shallow_dict(e) for e in case.errors],
    }


def _metric_to_dict(m: Metric) -> dict[str, Any]:
    d: dict[str, Any] = json_safe({**shallow_dict(m), "direction": m.direction.value})
    if not m.note:
        d.pop("note")  # optional: written only when there is one
    return d


def run_to_dict(run: RunResult) -> dict[str, Any]:
    return {
        **RESULTS.header(),
        "run_id": run.run_id,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "fingerprint": json_safe(run.fingerprint),
        "git": asdict(run.git) if run.git else None,
        "settings": json_safe(run.settings),
        "cases": [case_to_dict(c) for c in run.cases],
    }


def dump_results(run: RunResult, path: Path) -> None:
    """Write atomically: a reader never sees half a file."""
    write_json_document(run_to_dict(run), path)


def parse_results(doc: Any, source: str = "<results>", own: bool = False) -> RunResult:
    """A parsed results document checked (`RESULTS.load`) and decoded. With `own`, the caller hands `doc` over:
    its dicts become the objects' own (a third of the decoding time of a large file), so it must not be used
    again; otherwise `doc` is left as it was."""
    return _decode_run(RESULTS.load(doc, source), own)


PARALLEL_MIN_BYTES = 4_000_000  # files together at least this large: checked by a helper process (load_results_all)


def load_results_all(paths: list[Path], meanwhile: Callable[[], object] | None = None) -> list[RunResult]:
    """`[load_results(p) for p in paths]`: the same runs, or the same refusal (the first file's first), and then
    `meanwhile()` (work the caller needs next, e.g. an import). With large files and a CPU to spare
    (perfci/forked.py), msgspec's checking pass of every file runs in a forked helper while this process builds
    the runs and then runs `meanwhile`; a run is used only once the helper has checked its file, and a file the
    helper did not accept is read the usual way, as `load_results` reads it (docs/scale.md)."""
    from perfci.forked import start_helper
    from perfci.results_decoder import build_results

    with gc_paused():
        datas = [_bytes_or_none(p) for p in paths]
        helper = None
        if len(paths) >= 2 and sum(len(d) for d in datas if d is not None) >= PARALLEL_MIN_BYTES:
            helper = start_helper(lambda: [_verdict(d, str(p)) for p, d in zip(paths, datas, strict=True)])
        if helper is None:
            runs = [load_results(p) for p in paths]
            if meanwhile is not None:
                meanwhile()
            return runs
        with helper:
            built = [build_results(d) if d is not None else None for d in datas]  # used only where the helper agrees
            if meanwhile is not None:
                meanwhile()
            verdicts = helper.answer()
        if not isinstance(verdicts, list) or len(verdicts) != len(paths):
            verdicts = ["usual"] * len(paths)  # the helper failed: every file the usual way
        runs = []
        for path, run, verdict in zip(paths, built, verdicts, strict=True):
            if verdict == "ok" and run is not None:
                runs.append(run)
            elif isinstance(verdict, list) and len(verdict) == 3 and verdict[0] == "refused":
                raise ResultsFormatError(str(verdict[1]), hint=verdict[2])
            else:
                runs.append(load_results(path))
        return runs


def _bytes_or_none(path: Path) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None  # the usual way words it


def _verdict(data: bytes | None, source: str) -> str | list[Any]:
    """The helper's answer for one file: "ok" (`load_results` takes its fast path, and the semantic checks
    accept it), ["refused", message, hint] (a semantic check refused it: the words `load_results` would raise),
    or "usual" (`load_results` reads it the usual way)."""
    from perfci.results_decoder import check_results

    if data is None or not _orjson_reads_as_json(data):
        return "usual"
    checked = check_results(data, json_schema)
    if checked is None:
        return "usual"
    try:
        check_results_semantics(checked.started_at, checked.finished_at, checked.cases, source)
    except ResultsFormatError as exc:
        return ["refused", exc.message, exc.hint]
    return "ok"


def load_results(path: Path) -> RunResult:
    """A results file, checked and decoded: by the fast reader where it takes the file (`fast_results`), else
    the usual way (`RESULTS.read`), which refuses a bad file with its usual words."""
    with gc_paused():
        data = _bytes_or_none(path)
        run = fast_results(data, str(path)) if data is not None else None
        return run if run is not None else _decode_run(RESULTS.read(path), own=True)


def fast_results(data: bytes, source: str) -> RunResult | None:
    """The run in `data` where the fast reader takes it (current version, valid, no integer literal of 19 digits
    or more; perfci/results_decoder.py) and the semantic checks pass; None otherwise, and never an error: the
    caller then reads the file the usual way, which refuses it in its usual words at its usual moment (`perfci
    report` parses every file before it checks any)."""
    if not _orjson_reads_as_json(data):
        return None
    from perfci.results_decoder import decode_results

    with gc_paused():
        fast = decode_results(data, json_schema)
    if fast is None:
        return None
    run, checked = fast
    try:
        check_results_semantics(checked.started_at, checked.finished_at, checked.cases, source)
    except ResultsFormatError:
        return None
    return run


class _Builder:
    """Makes a frozen dataclass from a validated document's dict, with the field `changed` set to a new value:
    what `cls(**{**values, changed: new})` makes, without its per-field `object.__setattr__` and the merged dict
    (half the time of decoding a large results file). A dict whose keys the class does not take, or that lacks
    one it needs, goes to the class itself, which refuses it as it always did. For classes without
    `__post_init__` and `__slots__`."""

    def __init__(self, cls: type, changed: str) -> None:
        if hasattr(cls, "__post_init__") or "__slots__" in cls.__dict__:
            raise TypeError(f"{cls.__name__}: a _Builder needs a plain frozen dataclass")
        self.cls, self.changed = cls, changed
        self.names = frozenset(f.name for f in fields(cls))
        self.needed = frozenset(
            f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING and f.name != changed
        )
        self.defaults = {f.name: f.default for f in fields(cls) if f.default is not MISSING}
        self.factories = {f.name: f.default_factory for f in fields(cls) if f.default_factory is not MISSING}

    def __call__(self, values: dict[str, Any], new: Any, own: bool = False) -> Any:
        """The object; with `own`, `values` itself becomes its `__dict__` (no copy: the caller hands the dict
        over and never uses it again, as a document parsed for this load is)."""
        keys = values.keys()
        if not (keys <= self.names and self.needed <= keys):
            return self.cls(**{**values, self.changed: new})
        obj: Any = object.__new__(self.cls)
        if len(keys) + (self.changed not in keys) < len(self.names):  # a field with a default is absent
            missing = {n: v for n, v in self.defaults.items() if n not in keys}
            missing.update({n: make() for n, make in self.factories.items() if n not in keys and n != self.changed})
        else:
            missing = None
        if own:
            attrs = values
            object.__setattr__(obj, "__dict__", attrs)
        else:
            attrs = obj.__dict__
            attrs.update(values)
        if missing:
            attrs.update(missing)
        attrs[self.changed] = new
        return obj


_ROUND = _Builder(Round, "samples")
_METRIC = _Builder(Metric, "direction")
_DIRECTIONS = {d.value: d for d in Direction}


def _decode_run(doc: dict[str, Any], own: bool = False) -> RunResult:
    git = doc["git"]
    return RunResult(
        run_id=doc["run_id"],
        started_at=doc["started_at"],
        finished_at=doc["finished_at"],
        fingerprint=doc["fingerprint"],
        git=GitInfo(**git) if git else None,
        settings=doc["settings"],
        cases=tuple(_decode_case(c, own) for c in doc["cases"]),
    )


def _decode_case(c: dict[str, Any], own: bool) -> CaseResult:
    spec = CaseSpec(
        workload=c["workload"],
        params=c["params"],
        device=c["device"],
        source=c.get("source", ""),
        tags=tuple(c.get("tags", ())),
        suite=c.get("suite", ""),
    )
    rounds = tuple(_ROUND(r, tuple(r["samples"]), own) for r in c["rounds"])
    metrics = tuple(_METRIC(m, _DIRECTIONS[m["direction"]], own) for m in c["metrics"])
    errors = tuple(CaseError(**e) for e in c["errors"])
    return CaseResult(
        spec=spec,
        status=CaseStatus(c["status"]),
        rounds=rounds,
        metrics=metrics,
        errors=errors,
        flops=c.get("flops"),
        bytes=c.get("bytes"),
    )
