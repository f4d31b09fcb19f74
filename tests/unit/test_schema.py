from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from perfci.compare.saved import COMPARISON
from perfci.errors import ResultsFormatError
from perfci.model import RunResult
from perfci.schema import (
    RESULTS,
    SCHEMA_VERSION,
    DocumentFormat,
    dump_results,
    load_results,
    parse_results,
    run_to_dict,
)

GOLDEN = Path(__file__).parent.parent / "golden"


def test_round_trip_preserves_everything(tmp_path: Path, sample_run: RunResult) -> None:
    path = tmp_path / "r.json"
    dump_results(sample_run, path)
    loaded = load_results(path)
    assert loaded == sample_run
    assert run_to_dict(loaded) == run_to_dict(sample_run)


def test_written_file_has_versioned_header_and_raw_samples(tmp_results: Path) -> None:
    doc = json.loads(tmp_results.read_text())
    assert doc["schema"] == "perfci.results"
    assert doc["schema_version"] == SCHEMA_VERSION
    rnd = doc["cases"][0]["rounds"][0]
    assert len(rnd["samples"]) == 20 and rnd["iterations"] == 10


def test_unknown_version_is_a_clear_error(tmp_results: Path) -> None:
    doc = json.loads(tmp_results.read_text())
    doc["schema_version"] = 99
    with pytest.raises(ResultsFormatError, match="schema_version 99 is not supported"):
        parse_results(doc, "x.json")


def test_truncated_file_is_a_clear_error(tmp_path: Path, tmp_results: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text(tmp_results.read_text()[:300])
    with pytest.raises(ResultsFormatError, match=r"not valid JSON.*truncated"):
        load_results(broken)


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda d: d["cases"][0]["rounds"][0].update(samples=[]), "cases/0/rounds/0/samples"),
        (lambda d: d["cases"][0]["rounds"][0].update(iterations=0), "cases/0/rounds/0/iterations"),
        (lambda d: d["cases"][0].update(status="fine"), "cases/0/status"),
        (lambda d: d.update(started_at="yesterday"), "started_at"),
        # the shape of a time but not a time, or out of pandas' range: the history export failed on them (fuzzing)
        (lambda d: d.update(started_at="2026-02-30T00:00:00Z"), "started_at"),
        (lambda d: d.update(finished_at="2026-13-45T99:99:99Z"), "finished_at"),
        (lambda d: d.update(started_at="9999-01-01T00:00:00Z"), "started_at"),
        (
            lambda d: d.update(started_at="\u0662\u0660\u0662\u0666-01-01T00:00:00Z"),
            "started_at",
        ),  # Arabic-Indic digits
        (lambda d: d["cases"][0].pop("device"), "cases/0"),
        # the open-ended fingerprint and telemetry type the keys perfci reads (fuzzing: each made the readers
        # raise a traceback in compare, report, merge or ingest)
        # a sample from a picosecond to 10^7 s: beyond, the ratio of two runs' times overflowed (fuzzing)
        (lambda d: d["cases"][0]["rounds"][0].update(samples=[1e308]), "cases/0/rounds/0/samples/0"),
        (lambda d: d["cases"][0]["rounds"][0].update(samples=[1e-3, 5e-324]), "cases/0/rounds/0/samples/1"),
        (lambda d: d["fingerprint"].update(gpus=[1]), "fingerprint/gpus/0"),
        (lambda d: d["fingerprint"].update(gpus="abc"), "fingerprint/gpus"),
        (lambda d: d["fingerprint"].update(peaks=5), "fingerprint/peaks"),
        (lambda d: d["fingerprint"].update(libraries={"torch": [1]}), "fingerprint/libraries/torch"),
        (
            lambda d: d["cases"][0]["rounds"][0]["telemetry"].update(memory_host_bytes="abc"),
            "cases/0/rounds/0/telemetry/memory_host_bytes",
        ),
        (
            lambda d: d["cases"][0]["rounds"][0]["telemetry"].update(throttle_flagged={"x": 1}),
            "cases/0/rounds/0/telemetry/throttle_flagged",
        ),
    ],
)
def test_schema_violations_name_the_place(tmp_results: Path, mutate, where: str) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads(tmp_results.read_text())
    mutate(doc)
    with pytest.raises(ResultsFormatError, match=f"at {where}"):
        parse_results(doc, "x.json")


def test_not_a_results_file() -> None:
    with pytest.raises(ResultsFormatError, match="not a perfci results file"):
        parse_results({"hello": 1}, "x.json")


def test_golden_v1_file_still_loads() -> None:
    run = load_results(GOLDEN / "results-v1.json")
    assert run.cases and run.cases[0].rounds[0].samples


@pytest.mark.parametrize("version", [1, 2])
def test_documented_schema_is_the_shipped_one(version: int) -> None:
    docs = Path(__file__).parents[2] / "docs" / f"results-v{version}.schema.json"
    shipped = Path(__file__).parents[2] / "perfci" / "schemas" / f"results-v{version}.schema.json"
    assert json.loads(docs.read_text()) == json.loads(shipped.read_text())


def test_results_v1_migrates_to_v2_as_it_is() -> None:
    """Version 2 (issue #20) only makes the metric's optional `note` part of the schema; a version 1 document
    reads unchanged, without a deep copy (RESULTS.shallow), and the caller's document is left alone."""
    v1 = json.loads((GOLDEN / "results-v1.json").read_text())
    assert SCHEMA_VERSION == 2 and RESULTS.migrate(v1, "v1.json") == {**v1, "schema_version": 2}
    assert v1["schema_version"] == 1
    v1["cases"][0]["metrics"][0]["note"] = "above the measured peak"
    assert parse_results(v1, "v1.json").cases[0].metrics[0].note == "above the measured peak"


# The versioned-document mechanism (schema.DocumentFormat), on a made-up format at version 3.
_V3_SCHEMA = {
    "type": "object",
    "required": ["schema", "schema_version", "size_mib"],
    "properties": {"schema_version": {"const": 3}, "size_mib": {"type": "number", "minimum": 0}},
}


def _v1_to_v2(doc: dict[str, Any]) -> dict[str, Any]:
    doc["size_kib"] = doc.pop("size_bytes") / 1024
    return doc


def _v2_to_v3(doc: dict[str, Any]) -> dict[str, Any]:
    doc["size_mib"] = doc.pop("size_kib") / 1024
    return doc


_TOY = DocumentFormat("perfci.toy", "toy", 3, lambda version: _V3_SCHEMA, {1: _v1_to_v2, 2: _v2_to_v3})


def test_old_versions_are_migrated_in_order_and_the_input_is_left_alone() -> None:
    old = {"schema": "perfci.toy", "schema_version": 1, "size_bytes": 2 * 2**20}
    assert _TOY.load(old, "t.json") == {"schema": "perfci.toy", "schema_version": 3, "size_mib": 2.0}
    assert old == {"schema": "perfci.toy", "schema_version": 1, "size_bytes": 2 * 2**20}
    assert _TOY.load({"schema": "perfci.toy", "schema_version": 2, "size_kib": 512}, "t.json")["size_mib"] == 0.5
    assert _TOY.versions == (1, 2, 3)
    assert _TOY.header() == {"schema": "perfci.toy", "schema_version": 3}


@pytest.mark.parametrize(
    ("version", "message", "hint"),
    [
        (4, r"t.json: toy schema_version 4 is not supported \(this perfci reads 1..3\)", "upgrade perfci"),
        (0, "toy schema_version 0 is not supported", None),
        (None, "'schema_version' is missing or not an integer", None),
        ("1", "'schema_version' is missing or not an integer", None),
        (True, "'schema_version' is missing or not an integer", None),
    ],
)
def test_unknown_versions_are_clear_errors(version: object, message: str, hint: str | None) -> None:
    with pytest.raises(ResultsFormatError, match=message) as info:
        _TOY.load({"schema": "perfci.toy", "schema_version": version}, "t.json")
    assert info.value.hint is None if hint is None else hint in (info.value.hint or "")


def test_migrated_documents_are_validated() -> None:
    with pytest.raises(ResultsFormatError, match="invalid toy file at size_mib"):
        _TOY.load({"schema": "perfci.toy", "schema_version": 1, "size_bytes": -1}, "t.json")


def test_another_format_is_refused() -> None:
    with pytest.raises(ResultsFormatError, match=re.escape('not a perfci toy file (missing "schema": "perfci.toy")')):
        _TOY.load({"schema": "perfci.results", "schema_version": 3, "size_mib": 1}, "t.json")


def test_a_format_needs_a_migration_from_every_old_version() -> None:
    with pytest.raises(ValueError, match=r"no migration from version\(s\) \[2\]"):
        DocumentFormat("perfci.toy", "toy", 3, lambda version: _V3_SCHEMA, {1: _v1_to_v2})
    with pytest.raises(ValueError, match="oldest version 4"):
        DocumentFormat("perfci.toy", "toy", 3, lambda version: _V3_SCHEMA, oldest=4)


@pytest.mark.parametrize("fmt", [RESULTS, COMPARISON], ids=lambda f: f.kind)
def test_every_version_read_has_its_shipped_schema(fmt: DocumentFormat) -> None:
    for version in fmt.versions:
        props = fmt.json_schema(version)["properties"]
        assert props["schema"] == {"const": fmt.name}
        assert props["schema_version"] == {"const": version}


def test_duplicate_case_ids_and_round_indexes_are_refused(tmp_results: Path) -> None:
    """Fuzzing: a second case with the same id was compared (or ingested) depending on which came first, and a
    round with a repeated index was dropped without a word (per-round values are keyed by index)."""
    doc = json.loads(tmp_results.read_text())
    twice = {**doc, "cases": [*doc["cases"], doc["cases"][0]]}
    with pytest.raises(ResultsFormatError, match=r"case id '.+' appears more than once"):
        parse_results(twice, "x.json")
    case = doc["cases"][0]
    rounds = [case["rounds"][0], {**case["rounds"][1], "index": case["rounds"][0]["index"]}, *case["rounds"][2:]]
    renumbered = {**doc, "cases": [{**case, "rounds": rounds}, *doc["cases"][1:]]}
    with pytest.raises(ResultsFormatError, match=r"at cases/0/rounds: two rounds of .+ have the same index"):
        parse_results(renumbered, "x.json")
