"""Versioned JSON documents read and written through their written-out msgspec Structs.

A format (`DocumentFormat`) is a name, a version, the model Struct of its body (`RunResult` for results files)
and the Struct of its whole document: the body's class with the header's two fields, `schema` and
`schema_version`, written out next to the format (perfci/format/schema.py, perfci/format/comparison.py). msgspec
decodes a document into that Struct, checking every bound of its annotations and refusing unknown keys; the body
is then the model object of the same fields. What types cannot say (a time's calendar, ids unique across a list)
is `semantic`, run after decoding. The writer encodes the body after the header and runs the same checks on what
it wrote before it writes it: a file perfci writes is one it reads.

Older versions are read through one table of steps: version N's document (plain JSON values) is brought to N+1
by `migrations[N]`, in order, then checked as the current version. Their published schemas stay frozen in
perfci/format/schemas/; the current version's is generated from the document Struct (`json_schema`). A document
that is not JSON, not this format, of an unknown version, or not valid is one `ResultsFormatError` naming the file
and the JSON path.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Generic, TypeVar

import msgspec

from perfci.errors import ResultsFormatError
from perfci.format.jsonfile import MAX_NESTING, UNPARSABLE, explain_unparsable, read_bytes, write_atomic

T = TypeVar("T", bound=msgspec.Struct)
Migration = Callable[[dict[str, Any]], dict[str, Any]]


class _Header(msgspec.Struct):
    schema: Any = None
    schema_version: Any = None
    # what another tool's file holds instead (`foreign_hint`)
    benchmarks: Any = None
    machine_info: Any = None


def document_schema(data: bytes, source: str) -> tuple[object, str | None]:
    """A JSON document's "schema" field (None when it has none) and, for another tool's file, how to bring it in;
    the rest of the document is parsed but not built (a fraction of the time of a full parse of a large file)."""
    try:
        header = msgspec.json.decode(data, type=_HeaderOrOther)
    except UNPARSABLE:
        raise explain_unparsable(data, source, "JSON") from None
    return (header.schema if isinstance(header, _Header) else None), foreign_hint(header)


def foreign_hint(header: object) -> str | None:
    """How to bring in a file another tool wrote, when the header says which tool."""
    if isinstance(header, _Header) and header.benchmarks is not None and header.machine_info is not None:
        return "a pytest-benchmark file: bring it in with `perfci import pytest-benchmark FILE`"
    return None


_HeaderOrOther = _Header | list[Any] | str | float | bool | None  # any JSON: the header when it is an object


@dataclass(frozen=True, eq=False)
class DocumentFormat(Generic[T]):
    """One versioned JSON document format: its body's model Struct and its document's Struct (the body's fields
    and the header's `schema: Literal[name]`, `schema_version: int`)."""

    name: str  # the document's "schema" field, e.g. "perfci.results"
    kind: str  # what messages call such a file: "results", "comparison"
    version: int  # the version this perfci writes
    body: type[T]
    document: type[msgspec.Struct]
    # from version N (the key) to N+1, one for every version read but the current one; a step changes the content
    # (plain JSON values), the reader sets "schema_version"; None: version N reads unchanged as N+1 (it only
    # lacks what N+1 added), so a file whose every step is None is checked as it is, with its own version
    migrations: Mapping[int, Migration | None] = field(default_factory=dict)
    oldest: int = 1
    # what types cannot say (a time's calendar, ids unique across a list): run on the decoded document
    semantic: Callable[[T, str], None] | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.oldest <= self.version:
            raise ValueError(f"{self.name}: oldest version {self.oldest} is not in 1..{self.version}")
        missing = [v for v in range(self.oldest, self.version) if v not in self.migrations]
        if missing:
            raise ValueError(f"{self.name}: no migration from version(s) {missing} to the next")
        extra = set(self.document.__struct_fields__) - set(self.body.__struct_fields__)
        if extra != {"schema", "schema_version"} or not issubclass(self.document, self.body):
            raise TypeError(f"{self.name}: the document Struct must be the body's with `schema` and `schema_version`")

    @property
    def versions(self) -> tuple[int, ...]:
        return tuple(range(self.oldest, self.version + 1))

    def header(self) -> dict[str, Any]:
        return {"schema": self.name, "schema_version": self.version}

    @cached_property
    def unchanged(self) -> tuple[int, ...]:
        """The versions read as they are: the current one, and older ones whose every step up is None."""
        out = [self.version]
        for v in range(self.version - 1, self.oldest - 1, -1):
            if self.migrations.get(v) is not None:
                break
            out.append(v)
        return tuple(sorted(out))

    @cached_property
    def _decoder(self) -> msgspec.json.Decoder[Any]:
        return msgspec.json.Decoder(self.document)

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema of the current version, generated from the document Struct."""
        generated = msgspec.json.schema(self.document)
        document = generated["$defs"][self.document.__name__]
        document["properties"]["schema_version"] = {"const": self.version}
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://perfci.dev/schemas/{self.kind}-v{self.version}.schema.json",
            "title": f"perfci {self.kind}, schema_version {self.version}",
            **generated,
        }

    # -- reading

    def read(self, path: Path) -> T:
        return self.decode(read_bytes(path, self.kind), str(path))

    def load(self, doc: Any, source: str) -> T:
        """A document already parsed into plain JSON values."""
        try:
            data = msgspec.json.encode(doc)
        except (TypeError, OverflowError, msgspec.EncodeError):
            raise ResultsFormatError(f"{source}: not a perfci {self.kind} document.") from None
        return self.decode(data, source)

    def decode(self, data: bytes, source: str) -> T:
        with _nesting_room():
            try:  # the common case: a valid document of a version that reads as it is
                document = self._decoder.decode(data)
            except UNPARSABLE:
                document = None
            if document is None or getattr(document, "schema_version", None) not in self.unchanged:
                data = self._current(data, source)  # an older version brought up to date, or why not, in words
                document = self._parse(lambda: self._decoder.decode(data), data, source)
        return self.check_semantics(self._body(document), source)

    def _body(self, document: msgspec.Struct) -> T:
        """The model object of the document's fields (the document Struct is the body's, with the header)."""
        return self.body(*[getattr(document, name) for name in self.body.__struct_fields__])

    def check_semantics(self, value: T, source: str) -> T:
        """`value` after the checks types cannot express (`semantic`), which raise ResultsFormatError."""
        if self.semantic is not None:
            self.semantic(value, source)
        return value

    def _current(self, data: bytes, source: str) -> bytes:
        """`data` as a document of the current version (migrated from an older one), or the refusal: not JSON,
        another format, an unknown version."""
        header = self._parse(lambda: msgspec.json.decode(data, type=_HeaderOrOther), data, source)
        version = self._version(header, source)
        if version not in self.unchanged:
            data = self._migrated(data, version, source)
        return data

    def _version(self, header: _HeaderOrOther, source: str) -> int:
        if not isinstance(header, _Header) or header.schema != self.name:
            raise ResultsFormatError(
                f'{source}: not a perfci {self.kind} file (missing "schema": "{self.name}").',
                hint=foreign_hint(header),
            )
        version = header.schema_version
        if not isinstance(version, int) or isinstance(version, bool):
            raise ResultsFormatError(f"{source}: 'schema_version' is missing or not an integer.")
        if version not in self.versions:
            reads = f"{self.oldest}..{self.version}" if self.oldest < self.version else str(self.version)
            raise ResultsFormatError(
                f"{source}: {self.kind} schema_version {version} is not supported (this perfci reads {reads}).",
                hint=f"upgrade perfci to read newer {self.kind} files" if version > self.version else None,
            )
        return version

    def _migrated(self, data: bytes, version: int, source: str) -> bytes:
        doc: dict[str, Any] = self._parse(lambda: msgspec.json.decode(data), data, source)
        while version < self.version:
            step = self.migrations[version]
            doc = {**(step(doc) if step is not None else doc), "schema_version": version + 1}
            version += 1
        return msgspec.json.encode(doc)

    def _parse(self, decode: Callable[[], Any], data: bytes, source: str) -> Any:
        try:
            return decode()
        except msgspec.ValidationError as exc:
            raise ResultsFormatError(f"{source}: invalid {self.kind} file at {_refusal(str(exc))}") from None
        except UNPARSABLE:
            raise explain_unparsable(data, source, self.kind) from None

    # -- writing

    def encode(self, value: T) -> bytes:
        """The document: its header, then the fields of `value` (non-finite numbers as null), checked as a reader
        checks it (a ResultsFormatError where it is not a valid document)."""
        body = msgspec.json.encode(value)
        head = msgspec.json.encode(self.header())
        data = head[:-1] + b"," + body[1:]
        self.decode(data, f"the {self.kind} document to write")
        return data

    def write(self, value: T, path: Path) -> None:
        """Write atomically (a reader never sees half a file), after the checks of `encode`."""
        write_atomic(path, msgspec.json.format(self.encode(value), indent=1) + b"\n")


def _refusal(message: str) -> str:
    """msgspec's "Expected `int` >= 0 - at `$.cases[0].rounds[1].index`" as "cases/0/rounds/1/index: expected
    `int` >= 0." (the place as a JSON path, the reason after it). msgspec does not name an object's key whose value
    it refuses (`[...]`): that step is `*`. A refusal raised inside an object's own check names its place within the
    object first ("... - at `$.telemetry.cpu_wait` - at `$.cases[0].rounds[1]`"): the two are joined."""
    reason, *places = message.split(" - at `$")
    if not places:
        places = ["`"]
    where = "".join(p.rstrip("`") for p in reversed(places))
    steps = re.findall(r"\.([^.\[`]+)|\[([^\]]*)\]", where)
    place = "/".join("*" if index == "..." else name or index for name, index in steps) or "<top>"
    reason = "".join(c if c.isprintable() else repr(c)[1:-1] for c in reason)  # one line, whatever a key holds
    return f"{place}: {reason[:1].lower()}{reason[1:]}."


@contextmanager
def _nesting_room() -> Iterator[None]:
    """msgspec decodes nested containers by recursion, under the interpreter's recursion limit: for the decoding,
    the limit is what MAX_NESTING levels beyond the current depth need, so a document nested deeper is refused (a
    RecursionError) and one within it is read whatever the caller's limit."""
    depth, frame = 0, sys._getframe()
    while frame.f_back is not None:
        depth, frame = depth + 1, frame.f_back
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + MAX_NESTING + 8)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)
