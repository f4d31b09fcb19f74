"""The compiled schema check (perfci/jsoncheck.py): never accepts what jsonschema refuses, accepts the files perfci
writes, and leaves every refusal and its message to jsonschema (issue #21)."""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from perfci.compare.decide import compare_runs
from perfci.compare.policy import DecisionSettings
from perfci.compare.saved import COMPARISON, comparison_to_dict
from perfci.errors import ResultsFormatError
from perfci.jsoncheck import compile_schema, schema_source
from perfci.model import RunResult
from perfci.schema import RESULTS, DocumentFormat, run_to_dict, shipped_schema
from tests.conftest import make_case, make_run

GOLDEN = Path(__file__).parent.parent / "golden"
FORMATS = [RESULTS, COMPARISON]
ODD_VALUES: list[Any] = [
    None, True, False, 0, 1, -1, 1.0, 2.5, -0.5, 0.0, math.nan, math.inf, -math.inf, "", "x", "ok", "lower",
    "2026-11-30T00:00:00Z", [], [1.0], [1.0, "a"], [0.0], [math.nan, 1.0], [1.0, math.nan, -1.0], [True], {},
    {"a": 1}, (1.0,),
]  # fmt: skip


def _jsonschema_errors(fmt: DocumentFormat, doc: Any) -> list[Any]:
    return list(jsonschema.Draft202012Validator(fmt.json_schema(fmt.version)).iter_errors(doc))


def _jsonschema_message(fmt: DocumentFormat, doc: Any, source: str) -> str | None:
    """The message validation gave before the compiled check existed (jsonschema alone)."""
    error = jsonschema.exceptions.best_match(iter(_jsonschema_errors(fmt, doc)))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "<top>"
    return f"{source}: invalid {fmt.kind} file at {where}: {error.message}"


def _run() -> RunResult:
    return make_run([make_case("alpha", 1e-3, rounds=2), make_case("beta", 2e-3, rounds=3)], "r1")


def _documents() -> dict[str, tuple[DocumentFormat, dict[str, Any]]]:
    base, cand = _run(), make_run([make_case("alpha", 1.2e-3, seed=3)], "r2")
    comparison = compare_runs(base, cand, DecisionSettings(), ("a", "b"))
    return {
        "results": (RESULTS, json.loads(json.dumps(run_to_dict(base)))),
        "golden": (RESULTS, json.loads((GOLDEN / "results-v1.json").read_text())),
        "comparison": (COMPARISON, json.loads(json.dumps(comparison_to_dict(comparison)))),
        "golden-comparison": (COMPARISON, json.loads((GOLDEN / "comparison-v1.json").read_text())),
    }


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a document (dict keys and list positions)."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


def _mutants(doc: dict[str, Any], seed: int, n: int) -> list[dict[str, Any]]:
    """Documents one edit away from `doc`: a value replaced, a key removed, a key added."""
    rng = random.Random(seed)
    places = [p for p in _paths(doc) if p]
    out = []
    for _ in range(n):
        mutant = copy.deepcopy(doc)
        path = rng.choice(places)
        parent = mutant
        for part in path[:-1]:
            parent = parent[part]
        kind = rng.random()
        if kind < 0.7:
            parent[path[-1]] = copy.deepcopy(rng.choice(ODD_VALUES))
        elif kind < 0.85 and isinstance(parent, dict):
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[rng.choice(["extra", "note", "telemetry", "low", "suite"])] = copy.deepcopy(rng.choice(ODD_VALUES))
        else:
            parent.append(copy.deepcopy(rng.choice(ODD_VALUES)))
        out.append(mutant)
    return out


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.kind)
def test_every_shipped_schema_compiles(fmt: DocumentFormat) -> None:
    for version in fmt.versions:
        assert compile_schema(fmt.json_schema(version))
        assert "def check(x):" in schema_source(fmt.json_schema(version))


@pytest.mark.parametrize("name", ["results", "golden", "comparison", "golden-comparison"])
def test_files_perfci_writes_take_the_fast_path(name: str) -> None:
    fmt, doc = _documents()[name]
    doc = fmt.migrate(doc, name)  # a golden file of an older version, as every reader sees it
    assert _jsonschema_errors(fmt, doc) == []
    assert fmt._check(doc) is True


@pytest.mark.parametrize("name", ["results", "comparison"])
def test_never_accepts_what_jsonschema_refuses_and_refuses_with_its_message(name: str) -> None:
    fmt, doc = _documents()[name]
    refused = 0
    for i, mutant in enumerate(_mutants(doc, seed=hash(name) % 1000, n=800)):
        expected = _jsonschema_message(fmt, mutant, "m.json")
        if fmt._check(mutant):
            assert expected is None, (i, expected)
        if expected is None:
            fmt.validate(mutant, "m.json")  # accepted, as by jsonschema
        else:
            refused += 1
            with pytest.raises(ResultsFormatError) as info:
                fmt.validate(mutant, "m.json")
            assert info.value.message == expected
    assert refused > 150  # the edits do reach the schema's rules


def test_stricter_than_jsonschema_only_costs_time() -> None:
    """Values jsonschema accepts that the check does not (it then asks jsonschema): still accepted."""
    _, doc = _documents()["results"]
    rnd = doc["cases"][0]["rounds"][0]
    for edit in ({"iterations": 10.0}, {"samples": [math.nan, *rnd["samples"]]}, {"pid": 7.0}):
        mutant = copy.deepcopy(doc)
        mutant["cases"][0]["rounds"][0].update(edit)
        assert RESULTS._check(mutant) is False
        assert _jsonschema_errors(RESULTS, mutant) == []
        RESULTS.validate(mutant, "m.json")


@pytest.mark.parametrize(
    "samples",
    [[1.0, -1.0], [0.0], [1.0, True], [1.0, "2"], [1.0, None], [], [1.0, [2.0]], [math.nan, -1.0]],
)
def test_bad_samples_are_refused(samples: list[Any]) -> None:
    _, doc = _documents()["results"]
    doc["cases"][1]["rounds"][2]["samples"] = samples
    assert RESULTS._check(doc) is False
    with pytest.raises(ResultsFormatError, match="at cases/1/rounds/2/samples"):
        RESULTS.validate(doc, "m.json")


def test_nan_inside_samples_is_accepted_as_jsonschema_does() -> None:
    _, doc = _documents()["results"]
    doc["cases"][0]["rounds"][0]["samples"] = [1.0, math.nan, 2.0]
    assert RESULTS._check(doc) is True and _jsonschema_errors(RESULTS, doc) == []


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "string", "format": "date"}, "format"),
        ({"allOf": [{"type": "string"}]}, "allOf"),
        ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, "disjoint"),
        ({"oneOf": [{"minimum": 1}, {"type": "null"}]}, "disjoint"),
        ({"$ref": "https://example.com/s.json"}, "local"),
        ({"const": [1]}, "scalar"),
        ({"minimum": math.inf}, "finite"),
    ],
)
def test_keywords_it_cannot_compile_are_refused_at_compile_time(schema: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        compile_schema(schema)


def test_recursive_references_compile() -> None:
    kids = {"type": "array", "items": {"$ref": "#/$defs/node"}}
    node = {"type": "object", "properties": {"kids": kids}, "additionalProperties": False}
    tree = {"$defs": {"node": node}, "$ref": "#/$defs/node"}
    check = compile_schema(tree)
    assert check({"kids": [{"kids": []}, {}]})
    assert not check({"kids": [{"kids": [{"other": 1}]}]})


def test_the_results_schema_is_the_one_compiled() -> None:
    assert shipped_schema("results-v1.schema.json") is RESULTS.json_schema(1)


def test_arrays_of_numbers_through_a_ref_are_checked_in_bulk() -> None:
    """The raw samples' items are `{"$ref": "#/$defs/seconds"}`: the leaf is inlined, so a results file's
    samples are checked by one bulk test per list (types, then min and max), not a function call per sample."""
    schema = {
        "$defs": {"seconds": {"description": "d", "type": "number", "minimum": 1e-12, "maximum": 1e7}},
        "type": "array",
        "items": {"$ref": "#/$defs/seconds"},
    }
    source = schema_source(schema)
    assert "all(map(" not in source and "_n" in source
    check = compile_schema(schema)
    assert check([1e-3, 2.0]) and not check([1e-3, 1e8]) and not check([0.0]) and not check([1e-3, "x"])
