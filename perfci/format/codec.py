"""Versioned JSON documents read and written from one typed definition.

A format (`DocumentFormat`) is a frozen dataclass of the model (`RunResult` for results files), a name and a
version. Everything else comes from that definition:

- the check: a msgspec Struct type generated from the dataclass (`strict_type`), closed (an unknown key is
  refused) unless the class says it is open, with the bounds of the annotations; open objects (`KnownKeys`) check
  the types of the keys they name and keep all keys;
- the build: the checked Structs converted into the model's own dataclasses (`msgspec.convert`, no second parse;
  the check pass keeps open objects whole, and `_OpenObjects` checks their named keys after it, one conversion
  per key); an older version, or a document the check refuses, takes the slow road: the strict check (whose
  error names the place), then a parse into the dataclasses;
- the JSON Schema published for the current version (`DocumentFormat.json_schema`), generated from the check type;
- the writer: msgspec encodes the dataclasses, after the two header fields.

Older versions are read through one table of steps: version N's document (plain JSON values) is brought to N+1
by `migrations[N]`, in order, then checked as the current version. Their published schemas stay frozen in
perfci/format/schemas/. A document that is not JSON, not this format, of an unknown version, or not valid is one
`ResultsFormatError` naming the file and the JSON path.
"""

from __future__ import annotations

import dataclasses
import gc
import re
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Annotated, Any, Generic, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import msgspec

from perfci.errors import ResultsFormatError
from perfci.format.jsonfile import MAX_NESTING, UNPARSABLE, explain_unparsable, read_bytes, write_atomic
from perfci.format.model import KnownKeys

T = TypeVar("T")
Migration = Callable[[dict[str, Any]], dict[str, Any]]

# --- the check type, generated from the model ------------------------------------------------------------------


def strict_type(tp: Any, loose: bool = False) -> Any:
    """The type msgspec checks a document against: `tp` with every dataclass replaced by a Struct of the same
    fields (closed unless the class has `OPEN = True`), and every `KnownKeys` object by its TypedDict. `loose`:
    a `KnownKeys` object as a plain dict, every key kept and none checked (`_OpenObjects` checks them after)."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        inner, *metadata = args
        known = [m for m in metadata if isinstance(m, KnownKeys)]
        if known:
            return dict[str, Any] if loose else known[0].keys
        return Annotated[(strict_type(inner, loose), *metadata)]
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _strict_struct(tp, loose=loose)
    if origin in (Union, types.UnionType):
        return Union[tuple(strict_type(a, loose) for a in args)]  # noqa: UP007 (a runtime union of computed arms)
    if origin in (tuple, list, dict) and args:
        return origin[tuple(strict_type(a, loose) if a is not Ellipsis else a for a in args)]
    return tp


@cache
def _strict_struct(cls: type, header: tuple[tuple[str, Any], ...] = (), loose: bool = False) -> type[msgspec.Struct]:
    """The Struct of `cls`'s fields (after `header`'s, the fields a whole document opens with)."""
    hints = get_type_hints(cls, include_extras=True)
    spec: list[Any] = list(header)
    for f in dataclasses.fields(cls):
        tp = strict_type(hints[f.name], loose)
        if f.default is not dataclasses.MISSING:
            spec.append((f.name, tp, f.default))
        elif f.default_factory is not dataclasses.MISSING:
            spec.append((f.name, tp, msgspec.field(default_factory=f.default_factory)))
        else:
            spec.append((f.name, tp))
    closed = header or not getattr(cls, "OPEN", False)
    name = f"{cls.__name__}File" if header else cls.__name__
    # gc=False: a check's structs hold no cycles and are dropped at once; the collector need not track them
    return msgspec.defstruct(name, spec, forbid_unknown_fields=bool(closed), kw_only=True, gc=False)


@cache
def _value_lists(keys: type) -> dict[str, Any]:
    """For each key of a TypedDict, the type of a list of its values (bounds included)."""
    return {name: list[tp] for name, tp in get_type_hints(keys, include_extras=True).items()}  # type: ignore[valid-type]


class _OpenObjects:
    """The `KnownKeys` objects of a document decoded by the loose check type, gathered by their TypedDict (a
    walk generated from the model's annotations, visiting only the fields that can hold one), and their named keys
    checked: one `msgspec.convert` per key, of that key's values in every object. With the loose check, the same
    documents pass as with the strict check type, while every key is kept for the build."""

    def __init__(self, body: type) -> None:
        self._walk = self._fields_walker(body)  # the document: its Struct is the body's with the header's fields

    def check(self, document: Any) -> bool:
        """Whether every open object of `document` has its named keys' types (False: the strict check will say
        where not)."""
        if self._walk is None:
            return True
        found: dict[type, list[Any]] = {}
        self._walk(document, found)
        try:
            for keys, objects in found.items():
                # each named key's values, all objects' at once: one conversion per key, not one per object
                lists = _value_lists(keys)
                values: dict[str, list[Any]] = {name: [] for name in lists}
                for obj in objects:
                    for name, value in obj.items():
                        if name in values:
                            values[name].append(value)
                for name, vs in values.items():
                    if vs:
                        msgspec.convert(vs, lists[name])
        except msgspec.ValidationError:
            return False
        return True

    @classmethod
    def _walker(cls, tp: Any) -> Callable[[Any, dict[type, list[Any]]], None] | None:
        """A function that adds the open objects within a value of type `tp` (as the loose check type decodes it)
        to `found`; None where `tp` holds none. Each walker passes over a value of another kind (None, say)."""
        origin, args = get_origin(tp), get_args(tp)
        if origin is Annotated:
            inner, *metadata = args
            known = [m.keys for m in metadata if isinstance(m, KnownKeys)]
            if not known:
                return cls._walker(inner)
            keys = known[0]

            def add(value: Any, found: dict[type, list[Any]]) -> None:
                if isinstance(value, dict):
                    found.setdefault(keys, []).append(value)

            return add
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            return cls._dataclass_walker(tp)
        if origin in (Union, types.UnionType):
            arms = [w for w in map(cls._walker, args) if w is not None]
            if len(arms) <= 1:
                return arms[0] if arms else None

            def either(value: Any, found: dict[type, list[Any]]) -> None:
                for arm in arms:  # each passes over a value of another kind
                    arm(value, found)

            return either
        if origin in (tuple, list, dict) and args:
            inner_walk = cls._walker(args[-1] if origin is dict else args[0])
            if origin is tuple and args[-1] is not Ellipsis and any(map(cls._walker, args)):
                raise TypeError(f"{tp}: open objects in a fixed-length tuple are not supported")
            if inner_walk is None:
                return None
            kind = origin

            def each(value: Any, found: dict[type, list[Any]]) -> None:
                if isinstance(value, kind):
                    for v in value.values() if isinstance(value, dict) else value:
                        inner_walk(v, found)

            return each
        return None

    @classmethod
    def _dataclass_walker(cls, tp: type) -> Callable[[Any, dict[type, list[Any]]], None] | None:
        fields_walk = cls._fields_walker(tp)
        if fields_walk is None:
            return None
        struct = _strict_struct(tp, loose=True)

        def walk(value: Any, found: dict[type, list[Any]]) -> None:
            if isinstance(value, struct):
                fields_walk(value, found)

        return walk

    @classmethod
    def _fields_walker(cls, tp: type) -> Callable[[Any, dict[type, list[Any]]], None] | None:
        """A walk of the fields of a dataclass `tp`'s Struct that can hold open objects; None if none can."""
        hints = get_type_hints(tp, include_extras=True)
        fields = [(f.name, w) for f in dataclasses.fields(tp) if (w := cls._walker(hints[f.name])) is not None]
        if not fields:
            return None

        def walk(value: Any, found: dict[type, list[Any]]) -> None:
            for name, w in fields:
                w(getattr(value, name), found)

        return walk


# --- documents ---------------------------------------------------------------------------------------------------


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
    """One versioned JSON document format, defined by the model dataclass `body` it decodes into."""

    name: str  # the document's "schema" field, e.g. "perfci.results"
    kind: str  # what messages call such a file: "results", "comparison"
    version: int  # the version this perfci writes
    body: type[T]
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
    def check_type(self) -> type[msgspec.Struct]:
        """The current version's document (for the JSON Schema)."""
        header = (("schema", Literal[self.name]), ("schema_version", Literal[self.version]))
        body: Any = self.body
        return _strict_struct(body, header)

    @cached_property
    def _check(self) -> msgspec.json.Decoder[Any]:
        """The check pass: a document of the current version, or of one that reads unchanged as it."""
        header = (("schema", Literal[self.name]), ("schema_version", Literal[self.unchanged]))
        body: Any = self.body
        return msgspec.json.Decoder(_strict_struct(body, header) if len(self.unchanged) > 1 else self.check_type)

    @cached_property
    def _loose_check(self) -> msgspec.json.Decoder[Any]:
        """The check pass as the common case runs it: as `_check`, but open objects kept whole (checked after by
        `_open`), so the checked document can be turned into the model without parsing the bytes again."""
        header = (("schema", Literal[self.name]), ("schema_version", Literal[self.unchanged]))
        body: Any = self.body
        return msgspec.json.Decoder(_strict_struct(body, header, loose=True))

    @cached_property
    def _open(self) -> _OpenObjects:
        return _OpenObjects(self.body)

    @cached_property
    def _build(self) -> msgspec.json.Decoder[T]:
        return msgspec.json.Decoder(self.body)

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema of the current version, generated from the definition."""
        generated = msgspec.json.schema(self.check_type)
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
        with _nesting_room(), collector_paused():
            try:  # the common case: a valid document of the current version, checked and then built from the check
                checked = self._loose_check.decode(data)
            except UNPARSABLE:
                checked = None
            value: T
            if checked is not None and self._open.check(checked):
                # the checked Structs have the model's fields: converted, not parsed again (a file read ~15% faster)
                value = self._parse(lambda: msgspec.convert(checked, self.body, from_attributes=True), data, source)
            else:
                data = self._current(data, source)  # an older version brought up to date, or why not, in words
                value = self._parse(lambda: self._build.decode(data), data, source)
        return self.check_semantics(value, source)

    def checks(self, data: bytes) -> bool:
        """Whether `data` is a valid document that reads as it is (a version in `unchanged`): the type check alone,
        without building anything. Where it holds, `decode(data, source)` is `check_semantics(built(data), source)`:
        the check can run in a helper process while this one builds (schema.load_results_all)."""
        with _nesting_room():
            try:
                self._check.decode(data)
            except UNPARSABLE:
                return False
        return True

    def built(self, data: bytes) -> T | None:
        """The document built without its type check or its semantic checks; None where it cannot be built. Only for
        a document that `checks` accepts is this what `decode` builds: elsewhere, unknown keys pass unseen."""
        with _nesting_room(), collector_paused():
            try:
                return self._build.decode(data)
            except Exception:  # a document that does not build is one `checks` refuses: `decode` words why
                return None

    def check_semantics(self, value: T, source: str) -> T:
        """`value` after the checks types cannot express (`semantic`), which raise ResultsFormatError."""
        if self.semantic is not None:
            self.semantic(value, source)
        return value

    def _current(self, data: bytes, source: str) -> bytes:
        """`data` as a valid document of the current version (migrated from an older one), or the refusal: not
        JSON, another format, an unknown version, or the first place that is invalid."""
        header = self._parse(lambda: msgspec.json.decode(data, type=_HeaderOrOther), data, source)
        version = self._version(header, source)
        if version not in self.unchanged:
            data = self._migrated(data, version, source)
        self._parse(lambda: self._check.decode(data), data, source)
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
        doc: dict[str, Any] = msgspec.json.decode(data)
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
        """The document: its header, then the fields of `value` (non-finite numbers as null)."""
        body = msgspec.json.encode(value)
        head = msgspec.json.encode(self.header())
        return head[:-1] + b"," + body[1:]

    def write(self, value: T, path: Path) -> None:
        write_atomic(path, msgspec.json.format(self.encode(value), indent=1) + b"\n")


def _refusal(message: str) -> str:
    """msgspec's "Expected `int` >= 0 - at `$.cases[0].rounds[1].index`" as "cases/0/rounds/1/index: expected
    `int` >= 0." (the place as a JSON path, the reason after it). msgspec does not name an object's key whose value
    it refuses (`[...]`): that step is `*`."""
    reason, found, where = message.rpartition(" - at `")
    if not found:
        reason, where = message, "$`"
    steps = re.findall(r"\.([^.\[`]+)|\[([^\]]*)\]", where.rstrip("`").removeprefix("$"))
    place = "/".join("*" if index == "..." else name or index for name, index in steps) or "<top>"
    reason = "".join(c if c.isprintable() else repr(c)[1:-1] for c in reason)  # one line, whatever a key holds
    return f"{place}: {reason[:1].lower()}{reason[1:]}."


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a document is decoded, and what the decoding made moved out of its
    reach (`gc.freeze`) afterwards. A large results file makes about a million objects, none in a cycle (reference
    counting frees them); tracked, they set off collections that scan them again and again, during the decoding
    and long after it (docs/results-format.md has the measured cost)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


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
