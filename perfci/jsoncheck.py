"""A compiled check for the JSON Schema keywords perfci's shipped schemas use: a fast first pass of validation.

`compile_schema(schema)` turns a JSON Schema (draft 2020-12) into Python source, one function per object
schema and per `$defs` entry with every other keyword inlined as an expression, and compiles it once per
schema. The predicate it returns is *conservative*: it answers True only for documents that the JSON Schema
accepts, and may answer False for some that it accepts (it is stricter on purpose: an integral float where an
integer is asked for, a tuple where an array is, a dict subclass, `1.0` for the constant `1`).
`DocumentFormat.validate` (schema.py) asks `jsonschema` only when the predicate says False, so the verdict
and the message stay `jsonschema`'s: a bad file is refused exactly as before, and a good one costs one pass of
this check.

Arrays of plain numbers (the raw samples, most of a results file) are checked in bulk: the set of the items'
types, then their minimum and maximum against the bounds.

Compiling a schema with a keyword not listed in `KEYWORDS` raises ValueError, so a schema that starts using a
new keyword cannot be checked loosely by mistake (tests compile every shipped schema). `oneOf` is compiled only
when its branches declare disjoint types: then at most one branch can hold, and the stricter branches cannot turn
"two matched" into "one matched".
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]

# Annotations and structure: no effect on what is valid.
_IGNORED = frozenset({"$schema", "$id", "title", "description", "$comment", "$defs", "examples", "default"})
_BOUNDS = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")
KEYWORDS = _IGNORED | {
    "type", "const", "enum", "properties", "required", "additionalProperties", "items", "minItems",
    "minLength", "pattern", "$ref", "oneOf", *_BOUNDS,
}  # fmt: skip

# keywords that hold schemas or reach other ones: a referenced schema without them is inlined
_NESTED = frozenset({"properties", "required", "additionalProperties", "items", "$ref", "oneOf", "$defs"})
_NUMBER = frozenset({int, float})  # exact types: bool is neither (type(True) is bool)
_TYPES: dict[str, frozenset[type]] = {
    "object": frozenset({dict}),
    "array": frozenset({list}),
    "string": frozenset({str}),
    "integer": frozenset({int}),
    "number": _NUMBER,
    "boolean": frozenset({bool}),
    "null": frozenset({type(None)}),
}
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _types(schema: Any) -> frozenset[type] | None:
    """The Python types a schema's "type" keyword allows (None: no "type", any type)."""
    declared = schema.get("type") if isinstance(schema, dict) else None
    if declared is None:
        return None
    names = [declared] if isinstance(declared, str) else list(declared)
    unknown = [n for n in names if n not in _TYPES]
    if unknown:
        raise ValueError(f"unknown JSON Schema type(s) {unknown}")
    return frozenset(t for n in names for t in _TYPES[n])


def _bound_test(schema: dict[str, Any], v: str) -> str | None:
    """A Python expression that is False when number `v` breaks a bound of `schema` (None: no bounds). Written
    as jsonschema tests them ("invalid when v < minimum"), so a NaN passes here exactly when it passes there."""
    ops = {"minimum": "<", "exclusiveMinimum": "<=", "maximum": ">", "exclusiveMaximum": ">="}
    parts = [f"{v} {ops[k]} {schema[k]!r}" for k in _BOUNDS if k in schema]
    for k in _BOUNDS:
        if k in schema and (type(schema[k]) not in _NUMBER or not math.isfinite(schema[k])):
            raise ValueError(f"{k} must be a finite number")
    return f"not ({' or '.join(parts)})" if parts else None


def _number_array(bound: Callable[[Any], bool] | None) -> Check:
    """Items all plain numbers within the bounds, checked in bulk (the raw samples of a results file). The
    caller has checked that the value is a list."""

    def check(x: list[Any]) -> bool:
        if not set(map(type, x)) <= _NUMBER:
            return False
        if bound is None or not x:
            return True
        # min and max stand for every item, the bounds being an interval. min/max skip a NaN unless it comes
        # first (then they return it, and the array goes to the full check); a NaN passes any bound there
        low, high = min(x), max(x)
        return low == low and high == high and bound(low) and bound(high)

    return check


class _Compiler:
    """Writes the source: `expr` gives an expression for a schema applied to a variable; object schemas and
    references become functions (`fn`)."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.lines: list[str] = []
        self.names: dict[str, Any] = {"_SCALARS": _SCALARS}
        self.refs: dict[str, str] = {}
        self.defined: set[str] = set()  # functions whose source is written
        self.count = 0

    def name(self, prefix: str, value: Any = None) -> str:
        self.count += 1
        name = f"_{prefix}{self.count}"
        if value is not None:
            self.names[name] = value
        return name

    def ref(self, pointer: str) -> str:
        """The function checking the local reference `#/$defs/...`, written once."""
        if pointer not in self.refs:
            self.refs[pointer] = fn = self.name("ref")  # named before compiling: a recursive schema calls it
            self.function(fn, self.target(pointer))
        return self.refs[pointer]

    def function(self, fn: str, schema: Any) -> str:
        body = self.expr(schema, "x")
        call = re.fullmatch(r"\((\w+)\(x\)\)", body)
        if call and call[1] in self.defined:  # a function already written: the same function
            self.lines += [f"{fn} = {call[1]}", ""]
        else:
            self.lines += [f"def {fn}(x):", f"    return {body}", ""]
        self.defined.add(fn)
        return fn

    def target(self, pointer: str) -> Any:
        if not pointer.startswith("#/"):
            raise ValueError(f"only local references are compiled, not {pointer!r}")
        found: Any = self.root
        for part in pointer[2:].split("/"):
            found = found[part.replace("~1", "/").replace("~0", "~")]
        return found

    def expr(self, schema: Any, v: str) -> str:
        """A Python expression over the variable `v` that is True only when `schema` accepts it."""
        if schema is True or schema == {}:
            return "True"
        if schema is False:
            return "False"
        if not isinstance(schema, dict):
            raise ValueError(f"not a schema: {schema!r}")
        unknown = set(schema) - KEYWORDS
        if unknown:
            raise ValueError(f"JSON Schema keyword(s) {sorted(unknown)} are not compiled")
        types = _types(schema)
        parts: list[str] = []
        if types is not None:
            only = next(iter(types)).__name__ if len(types) == 1 else None
            parts.append(f"type({v}) is {only}" if only and only != "NoneType" else f"{v} is None" if only
                         else f"type({v}) in {self.name('t', types)}")  # fmt: skip
        parts += self.scalar(schema, v, types)
        parts += self.array(schema, v, types)
        if "properties" in schema or "required" in schema or "additionalProperties" in schema:
            fn = self.object_function(schema)
            parts.append(f"{fn}({v})" if types == _TYPES["object"] else f"(type({v}) is not dict or {fn}({v}))")
        if "$ref" in schema:
            target = self.target(schema["$ref"])
            if isinstance(target, dict) and not set(target) & _NESTED:  # a leaf: inlined
                parts.append(self.expr(target, v))
            else:
                parts.append(f"{self.ref(schema['$ref'])}({v})")
        if "oneOf" in schema:
            parts.append(self.one_of(schema["oneOf"], v))
        return " and ".join(f"({p})" for p in parts) if parts else "True"

    def scalar(self, schema: dict[str, Any], v: str, types: frozenset[type] | None) -> list[str]:
        out = []
        if "const" in schema:
            value = schema["const"]
            if type(value) not in _SCALARS:
                raise ValueError("only scalar constants are compiled")
            out.append(f"type({v}) is {self.name('k', type(value))} and {v} == {self.name('c', [value])}[0]")
        if "enum" in schema:
            values = list(schema["enum"])
            if any(type(x) not in _SCALARS for x in values):
                raise ValueError("only enums of scalars are compiled")
            pairs = self.name("e", frozenset((type(x), x) for x in values))
            out.append(f"type({v}) in _SCALARS and (type({v}), {v}) in {pairs}")
        is_str = types == _TYPES["string"]
        if "minLength" in schema:
            test = f"len({v}) >= {int(schema['minLength'])}"
            out.append(test if is_str else f"type({v}) is not str or {test}")
        if "pattern" in schema:
            test = f"{self.name('p', re.compile(schema['pattern']).search)}({v}) is not None"
            out.append(test if is_str else f"type({v}) is not str or {test}")
        bound = _bound_test(schema, v)
        if bound is not None:
            out.append(bound if types is not None and types <= _NUMBER else f"type({v}) not in _NUM or {bound}")
            self.names["_NUM"] = _NUMBER
        return out

    def array(self, schema: dict[str, Any], v: str, types: frozenset[type] | None) -> list[str]:
        is_list = types == _TYPES["array"]
        out = []
        if "minItems" in schema:
            test = f"len({v}) >= {int(schema['minItems'])}"
            out.append(test if is_list else f"type({v}) is not list or {test}")
        if "items" in schema:
            items = schema["items"]
            if isinstance(items, dict) and set(items) - _IGNORED == {"$ref"}:
                target = self.target(items["$ref"])
                if isinstance(target, dict) and not set(target) & _NESTED:
                    items = target  # a leaf (the samples' "seconds"): inlined, so a list of numbers is checked in bulk
            if isinstance(items, dict) and set(items) - _IGNORED <= {"type", *_BOUNDS} and _types(items) == _NUMBER:
                source = _bound_test(items, "v")
                bound = eval(f"lambda v: {source}") if source else None  # our own text: numbers and comparisons
                test = f"{self.name('n', _number_array(bound))}({v})"
            else:
                item = self.function(self.name("item"), items)
                test = f"all(map({item}, {v}))"
            out.append(test if is_list else f"type({v}) is not list or {test}")
        return out

    def object_function(self, schema: dict[str, Any]) -> str:
        """A function over a dict: required keys, each property, and the keys not named."""
        fn = self.name("obj")
        props: dict[str, Any] = schema.get("properties", {})
        required = list(schema.get("required", ()))
        body = [f"def {fn}(x):"]
        if required:
            body.append(f"    if not ({' and '.join(f'{k!r} in x' for k in required)}):")
            body.append("        return False")
        for key, sub in props.items():
            test = self.expr(sub, "v")
            if test == "True":
                continue
            if key in required:
                body.append(f"    v = x[{key!r}]")
                body.append(f"    if not ({test}):")
            else:
                body.append(f"    v = x.get({key!r}, _ABSENT)")
                body.append(f"    if v is not _ABSENT and not ({test}):")
            body.append("        return False")
        self.names["_ABSENT"] = _ABSENT
        extra = schema.get("additionalProperties", True)
        if extra is not True and extra != {}:
            names = self.name("keys", frozenset(props))
            body.append(f"    if not x.keys() <= {names}:")
            if extra is False:
                body.append("        return False")
            else:
                each = self.function(self.name("extra"), extra)
                body.append(f"        return all({each}(v) for k, v in x.items() if k not in {names})")
        body += ["    return True", ""]
        self.lines += body
        self.defined.add(fn)
        return fn

    def one_of(self, branches: list[Any], v: str) -> str:
        declared = [_types(b) for b in branches]
        disjoint = all(t is not None for t in declared) and not any(
            a & b for i, a in enumerate(declared) for b in declared[i + 1 :] if a is not None and b is not None
        )
        if not disjoint:
            raise ValueError("oneOf is compiled only when its branches declare disjoint types")
        return " or ".join(f"({self.expr(b, v)})" for b in branches)  # at most one branch can hold


class _Absent:
    """A property not in the object."""


_ABSENT = _Absent()


def compile_schema(schema: dict[str, Any]) -> Check:
    """A conservative predicate for `schema` (module docstring): True only where the schema accepts."""
    compiler = _Compiler(schema)
    compiler.function("check", schema)
    namespace = dict(compiler.names)
    exec(compile("\n".join(compiler.lines), "<perfci.jsoncheck>", "exec"), namespace)  # our own source (schema_source)
    check: Check = namespace["check"]
    return check


def schema_source(schema: dict[str, Any]) -> str:
    """The Python source `compile_schema` writes for `schema` (for reading and for tests)."""
    compiler = _Compiler(schema)
    compiler.function("check", schema)
    return "\n".join(compiler.lines)
