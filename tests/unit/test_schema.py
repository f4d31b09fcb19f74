from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import pytest
from jsonschema import Draft202012Validator
from msgspec import Meta

from perfci.errors import ResultsFormatError
from perfci.format.codec import DocumentFormat
from perfci.format.model import (
    CaseResult,
    CaseSpec,
    CaseStatus,
    DeviceTime,
    GitInfo,
    KernelTime,
    Round,
    RunResult,
)
from perfci.format.schema import RESULTS, SCHEMA_VERSION, dump_results, load_results, run_to_dict
from tests.formats import parse_results
from tests.tools.write_schemas import FORMATS, SCHEMAS, schema_path, schema_text

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
        # the shape of a time but not a time, or out of pandas' range: the history export cannot take them
        (lambda d: d.update(started_at="2026-02-30T00:00:00Z"), "started_at"),
        (lambda d: d.update(finished_at="2026-13-45T99:99:99Z"), "finished_at"),
        (lambda d: d.update(started_at="9999-01-01T00:00:00Z"), "started_at"),
        (
            lambda d: d.update(started_at="\u0662\u0660\u0662\u0666-01-01T00:00:00Z"),
            "started_at",
        ),  # Arabic-Indic digits
        (lambda d: d["cases"][0].pop("device"), "cases/0"),
        # the open-ended fingerprint and telemetry type the keys perfci reads
        # a sample from a picosecond to 10^7 s: beyond, the ratio of two runs' times could overflow
        (lambda d: d["cases"][0]["rounds"][0].update(samples=[1e308]), "cases/0/rounds/0/samples/0"),
        (lambda d: d["cases"][0]["rounds"][0].update(samples=[1e-3, 5e-324]), "cases/0/rounds/0/samples/1"),
        (lambda d: d["fingerprint"].update(gpus=[1]), "fingerprint/gpus/0"),
        (lambda d: d["fingerprint"].update(gpus="abc"), "fingerprint/gpus"),
        (lambda d: d["fingerprint"].update(peaks=5), "fingerprint/peaks"),
        (lambda d: d["fingerprint"].update(libraries={"torch": [1]}), "fingerprint/libraries/\\*"),
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


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.kind)
def test_the_published_schema_is_generated_from_the_definition(fmt: DocumentFormat[Any]) -> None:
    """The current version's JSON Schema in perfci/format/schemas/ is what the definition generates (regenerate with
    `python -m tests.tools.write_schemas`); it is a JSON Schema that accepts a file perfci writes."""
    assert schema_path(fmt).read_text() == schema_text(fmt)
    Draft202012Validator.check_schema(fmt.json_schema())


def test_the_generated_schema_accepts_written_files_and_refuses_bad_ones(tmp_results: Path) -> None:
    validator = Draft202012Validator(RESULTS.json_schema())
    doc = json.loads(tmp_results.read_text())
    assert validator.is_valid(doc)
    doc["cases"][0]["rounds"][0]["extra"] = 1
    assert not validator.is_valid(doc)


def test_older_schemas_stay_as_published() -> None:
    for stem in ("results", "comparison"):
        old = json.loads((SCHEMAS / f"{stem}-v1.schema.json").read_text())
        assert old["properties"]["schema_version"] == {"const": 1}


def test_results_v1_and_v2_read_as_they_are() -> None:
    """Version 2 only made the metric's optional `note` part of the format, and version 3 a round's optional
    `device` clock: versions 1 and 2 read unchanged (no migration step), and the caller's document is left
    alone. A version-2 file is still refused where it is invalid as version 3."""
    v1 = json.loads((GOLDEN / "results-v1.json").read_text())
    assert SCHEMA_VERSION == 3 and RESULTS.migrations == {1: None, 2: None} and RESULTS.unchanged == (1, 2, 3)
    v1["cases"][0]["metrics"][0]["note"] = "above the measured peak"
    assert parse_results(v1, "v1.json").cases[0].metrics[0].note == "above the measured peak"
    assert v1["schema_version"] == 1
    v2 = {**v1, "schema_version": 2}
    assert parse_results(v2, "v2.json").run_id == v1["run_id"]
    v2["cases"][0]["rounds"][0]["samples"] = []
    with pytest.raises(ResultsFormatError, match="rounds/0/samples"):
        parse_results(v2, "v2.json")


def test_a_device_clock_round_trips(tmp_path: Path, sample_run: RunResult) -> None:
    from dataclasses import replace

    from perfci.format.model import DeviceTime, KernelTime

    device = DeviceTime("cupti", (1e-3, 1.1e-3), kernels=12, dropped_calls=1, top=(KernelTime("gemm", 8e-4, 1.0),))
    case = sample_run.cases[0]
    rounds = tuple(replace(r, device=device) for r in case.rounds)
    run = replace(sample_run, cases=(replace(case, rounds=rounds), *sample_run.cases[1:]))
    path = tmp_path / "r.json"
    dump_results(run, path)
    back = load_results(path)
    assert back.cases[0].rounds[0].device == device
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == 3
    doc["cases"][0]["rounds"][0]["device"]["samples"] = []
    with pytest.raises(ResultsFormatError, match="device/samples"):
        parse_results(doc, "bad.json")


# The versioned-document mechanism (codec.DocumentFormat), on a made-up format at version 3.


class _Toy(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    size_mib: Annotated[float, Meta(ge=0)]


class _ToyFile(_Toy, frozen=True, kw_only=True):
    schema: Literal["perfci.toy"]
    schema_version: int


def _v1_to_v2(doc: dict[str, Any]) -> dict[str, Any]:
    doc["size_kib"] = doc.pop("size_bytes") / 1024
    return doc


def _v2_to_v3(doc: dict[str, Any]) -> dict[str, Any]:
    doc["size_mib"] = doc.pop("size_kib") / 1024
    return doc


_TOY = DocumentFormat("perfci.toy", "toy", 3, _Toy, _ToyFile, {1: _v1_to_v2, 2: _v2_to_v3})


def test_old_versions_are_migrated_in_order_and_the_input_is_left_alone() -> None:
    old = {"schema": "perfci.toy", "schema_version": 1, "size_bytes": 2 * 2**20}
    assert _TOY.load(old, "t.json") == _Toy(2.0)
    assert old == {"schema": "perfci.toy", "schema_version": 1, "size_bytes": 2 * 2**20}
    assert _TOY.load({"schema": "perfci.toy", "schema_version": 2, "size_kib": 512}, "t.json") == _Toy(0.5)
    assert _TOY.versions == (1, 2, 3)
    assert _TOY.header() == {"schema": "perfci.toy", "schema_version": 3}
    assert json.loads(_TOY.encode(_Toy(1.5))) == {"schema": "perfci.toy", "schema_version": 3, "size_mib": 1.5}


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


def test_migrated_documents_are_checked() -> None:
    with pytest.raises(ResultsFormatError, match="invalid toy file at size_mib: expected `float` >= 0"):
        _TOY.load({"schema": "perfci.toy", "schema_version": 1, "size_bytes": -1}, "t.json")


def test_unknown_keys_of_a_closed_object_are_refused() -> None:
    with pytest.raises(ResultsFormatError, match="invalid toy file at <top>: object contains unknown field `x`"):
        _TOY.load({"schema": "perfci.toy", "schema_version": 3, "size_mib": 1, "x": 2}, "t.json")


def test_another_format_is_refused() -> None:
    with pytest.raises(ResultsFormatError, match=re.escape('not a perfci toy file (missing "schema": "perfci.toy")')):
        _TOY.load({"schema": "perfci.results", "schema_version": 3, "size_mib": 1}, "t.json")


def test_a_format_needs_a_migration_from_every_old_version() -> None:
    with pytest.raises(ValueError, match=r"no migration from version\(s\) \[2\]"):
        DocumentFormat("perfci.toy", "toy", 3, _Toy, _ToyFile, {1: _v1_to_v2})
    with pytest.raises(ValueError, match="oldest version 4"):
        DocumentFormat("perfci.toy", "toy", 3, _Toy, _ToyFile, oldest=4)
    with pytest.raises(TypeError, match="the body's with `schema` and `schema_version`"):
        DocumentFormat("perfci.toy", "toy", 3, _Toy, _Toy, {1: None, 2: None})


def test_open_objects_keep_unknown_keys_and_check_known_ones(tmp_results: Path) -> None:
    doc = json.loads(tmp_results.read_text())
    doc["fingerprint"]["custom"] = {"nested": [1, "two"]}
    doc["cases"][0]["rounds"][0]["telemetry"]["mine"] = 3
    run = parse_results(doc, "x.json")
    assert run.fingerprint["custom"] == {"nested": [1, "two"]}
    assert run.cases[0].rounds[0].telemetry["mine"] == 3
    doc["fingerprint"]["cpu_logical_cores"] = -1
    with pytest.raises(ResultsFormatError, match="at fingerprint/cpu_logical_cores: expected `int` >= 0"):
        parse_results(doc, "x.json")


def test_duplicate_case_ids_and_round_indexes_are_refused(tmp_results: Path) -> None:
    """A second case with the same id would be compared (or ingested) depending on which came first, and a
    round with a repeated index would be dropped without a word (per-round values are keyed by index)."""
    doc = json.loads(tmp_results.read_text())
    twice = {**doc, "cases": [*doc["cases"], doc["cases"][0]]}
    with pytest.raises(ResultsFormatError, match=r"case id '.+' appears more than once"):
        parse_results(twice, "x.json")
    case = doc["cases"][0]
    rounds = [case["rounds"][0], {**case["rounds"][1], "index": case["rounds"][0]["index"]}, *case["rounds"][2:]]
    renumbered = {**doc, "cases": [{**case, "rounds": rounds}, *doc["cases"][1:]]}
    with pytest.raises(ResultsFormatError, match=r"at cases/0/rounds: two rounds of .+ have the same index"):
        parse_results(renumbered, "x.json")


def test_a_document_reads_back_as_the_model_it_was_written_from(tmp_path: Path, sample_run: RunResult) -> None:
    """The reader decodes into the model's own Structs: open objects' unknown keys, a device clock and a git section
    come back as they were written, with the same types (tuples, enums, floats)."""
    device = DeviceTime("cupti", (1e-3, 1.1e-3), kernels=12, top=(KernelTime("gemm", 8e-4, 1.0),))
    case = sample_run.cases[0]
    rounds = tuple(replace(r, device=device, telemetry={**r.telemetry, "mine": [1, "x"]}) for r in case.rounds)
    run = replace(
        sample_run,
        fingerprint={**sample_run.fingerprint, "custom": {"nested": True}},
        git=GitInfo("abc123", "main", False),
        cases=(replace(case, rounds=rounds), *sample_run.cases[1:]),
    )
    path = tmp_path / "r.json"
    dump_results(run, path)
    built = load_results(path)
    assert built == run and type(built) is RunResult
    assert repr(built) == repr(run)
    assert built.cases[0].rounds[0].telemetry["mine"] == [1, "x"] and built.fingerprint["custom"] == {"nested": True}


def test_the_writer_checks_what_the_reader_checks(tmp_path: Path, sample_run: RunResult) -> None:
    """A run the reader would refuse is not written: a bound of the format (a negative count), a check types cannot
    say (a case id twice) and an open object's known key of another type."""
    path = tmp_path / "r.json"
    case = sample_run.cases[0]
    bad_round = replace(case, rounds=(replace(case.rounds[0], index=-1), *case.rounds[1:]))
    with pytest.raises(ResultsFormatError, match="invalid results file at cases/0/rounds/0/index: expected `int` >= 0"):
        dump_results(replace(sample_run, cases=(bad_round, *sample_run.cases[1:])), path)
    with pytest.raises(ResultsFormatError, match="appears more than once"):
        dump_results(replace(sample_run, cases=(case, case)), path)
    assert not path.exists()
    with pytest.raises(ValueError, match=r"Expected `float` <= 1.0 - at `\$.telemetry.cpu_wait`"):
        replace(case.rounds[0], telemetry={"cpu_wait": 2.0})


def test_open_objects_are_checked_where_they_are_and_keep_every_key() -> None:
    """A round's telemetry in a results file: its named keys checked, the place named to the key, others kept."""
    run = _run_with_telemetry({"timer": "t", "mine": {"any": [1]}})
    assert RESULTS.decode(RESULTS.encode(run), "x").cases[0].rounds[0].telemetry == {"timer": "t", "mine": {"any": [1]}}
    doc = msgspec.json.decode(RESULTS.encode(run))
    doc["cases"][0]["rounds"][0]["telemetry"]["timer"] = 5
    with pytest.raises(ResultsFormatError, match="at cases/0/rounds/0/telemetry/timer: expected `str`, got `int`"):
        parse_results(doc, "x.json")


def _run_with_telemetry(telemetry: dict[str, Any]) -> RunResult:
    r = Round(0, 1, 1, (1e-3,), 0.0, "budget", 1, telemetry=telemetry)
    case = CaseResult.of(CaseSpec("w", {}, "cpu"), CaseStatus.OK, (r,))
    return RunResult("r", "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", {}, None, {}, (case,))
