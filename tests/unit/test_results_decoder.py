"""The fast reader of results files (perfci/results_decoder.py) against the usual one: for thousands of mutated
documents, `load_results` (fast path first) and the usual path (`RESULTS.read`: orjson or json, migration, the
JSON Schema, the semantic checks) must agree: the same run, or the same refusal in the same words. And the fast
path must never accept what the JSON Schema refuses."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from jsonschema import Draft202012Validator

from perfci.errors import PerfciError
from perfci.model import RunResult
from perfci.results_decoder import VERSION, decode_results
from perfci.schema import RESULTS, SCHEMA_VERSION, _decode_run, json_schema, load_results
from tests.unit.test_fuzz_loaders import FUZZ, SEEDS, VALID_RESULTS, _mutate


def _valid() -> dict[str, Any]:
    """The golden results file as version 2, with typed telemetry and fingerprint keys (which the fast path
    checks with the schema's compiled check) and a metric note."""
    doc = copy.deepcopy(VALID_RESULTS)
    doc["schema_version"] = SCHEMA_VERSION
    doc["fingerprint"].update({"libraries": {"numpy": "2.1"}, "memory_total_bytes": 2**33, "peaks": {}})
    for case in doc["cases"]:
        for r in case["rounds"]:
            r["telemetry"] = {
                "timer": "perf_counter",
                "work_sources": {"flops": "declared"},
                "memory_host_bytes": 4096,
                "reference_per_call_s": [1e-6, 2e-6],
                "notes": {"x": 1},
            }
        case["metrics"][0]["note"] = "above the measured peak"
    return doc


VALID = _valid()
VALIDATOR = Draft202012Validator(json_schema())


def _usual(path: Path) -> RunResult:
    return _decode_run(RESULTS.read(path), own=True)


def _outcome(load: Any) -> tuple[str, Any]:
    try:
        return "loaded", load()
    except PerfciError as exc:
        return "refused", str(exc)


def test_the_structs_mirror_the_current_version() -> None:
    assert VERSION == SCHEMA_VERSION == RESULTS.version


def test_a_valid_file_reads_the_same_both_ways(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(VALID))
    assert decode_results(path.read_bytes(), json_schema) is not None  # the fast path took it
    fast, usual = load_results(path), _usual(path)
    assert fast == usual
    assert fast.cases[0].rounds[0].telemetry == VALID["cases"][0]["rounds"][0]["telemetry"]
    assert fast.cases[0].metrics[0].note == "above the measured peak"
    assert fast.cases[0].id == "t.alpha[n=8]@cpu"


def test_an_older_version_goes_the_usual_way(tmp_path: Path) -> None:
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(VALID_RESULTS))
    assert decode_results(path.read_bytes(), json_schema) is None
    assert load_results(path) == _usual(path)


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("cases", 0, "rounds", 0, "telemetry"), None),  # null where the schema asks for an object
        (("cases", 0, "rounds", 0, "telemetry", "timer"), 5),  # a typed telemetry key of the wrong type
        (("fingerprint", "cpu_logical_cores"), -1),  # a typed fingerprint key out of range
        (("cases", 0, "rounds", 0, "samples", 0), 0),  # a sample below a picosecond
        (("cases", 0, "rounds", 0, "index"), 1.0),  # an integral float: the schema takes it, the fast path not
        (("cases", 0, "rounds", 0, "unknown"), 1),  # a key the schema does not name
        (("started_at",), "2026-13-45T00:00:00Z"),  # the pattern holds, the calendar does not (semantic)
    ],
)
def test_the_fast_path_leaves_doubtful_files_to_the_usual_one(
    tmp_path: Path, where: tuple[Any, ...], value: Any
) -> None:
    doc = copy.deepcopy(VALID)
    parent = doc
    for key in where[:-1]:
        parent = parent[key]
    parent[where[-1]] = value
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    assert _outcome(lambda: load_results(path)) == _outcome(lambda: _usual(path))


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("decoder")


@given(SEEDS)
@FUZZ
def test_mutated_files_read_the_same_both_ways(folder: Path, seed: int) -> None:
    rng = random.Random(seed)
    doc: Any = copy.deepcopy(VALID)
    for _ in range(rng.randint(1, 3)):
        doc = _mutate(doc, rng)
    path = folder / "r.json"
    path.write_text(json.dumps(doc))
    if decode_results(path.read_bytes(), json_schema) is not None:
        assert VALIDATOR.is_valid(doc), "the fast path accepted a document the JSON Schema refuses"
    assert _outcome(lambda: load_results(path)) == _outcome(lambda: _usual(path))


@pytest.mark.parametrize(
    "docs",
    [
        ["twice", "valid"],
        ["valid", "broken"],
        ["twice", "broken"],  # the usual order: every file parsed, then each results file checked
        ["older", "valid"],
        ["valid", "valid"],
    ],
)
def test_report_reads_the_same_with_the_fast_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[str]
) -> None:
    from perfci.api import report as report_api

    twice = copy.deepcopy(VALID)
    twice["cases"].append(copy.deepcopy(twice["cases"][0]))
    older = {**copy.deepcopy(VALID), "schema_version": 1}
    texts = {
        "valid": json.dumps(VALID),
        "twice": json.dumps(twice),
        "older": json.dumps(older),
        "broken": json.dumps(VALID)[:-30],
    }
    paths = []
    for i, name in enumerate(docs):
        paths.append(tmp_path / f"{i}.json")
        paths[-1].write_text(texts[name])
    fast = _outcome(lambda: report_api.load_inputs(paths, 0.05))
    monkeypatch.setattr(report_api, "fast_results", lambda data, source: None)
    usual = _outcome(lambda: report_api.load_inputs(paths, 0.05))
    assert fast[0] == usual[0]
    if fast[0] == "refused":
        assert fast == usual
    else:  # the same runs (the comparison made from them has its own time)
        assert (fast[1].baseline, fast[1].candidate) == (usual[1].baseline, usual[1].candidate)


@pytest.mark.parametrize("levels", [300, 1_030, 5_000])
def test_deeply_nested_open_objects_go_the_usual_way(tmp_path: Path, levels: int) -> None:
    """msgspec reads any depth; the usual path reads 1,024 levels and refuses more (later code recurses)."""
    for where in ("settings", "telemetry"):
        doc = copy.deepcopy(VALID)
        target = doc["settings"] if where == "settings" else doc["cases"][0]["rounds"][0]["telemetry"]
        target["deep"] = "DEEP"  # written as text: json.dumps would recurse past Python's limit
        path = tmp_path / f"{where}.json"
        path.write_text(json.dumps(doc).replace('"DEEP"', "[" * levels + "]" * levels))
        assert decode_results(path.read_bytes(), json_schema) is None
        assert _outcome(lambda: load_results(path)) == _outcome(lambda: _usual(path))  # noqa: B023
