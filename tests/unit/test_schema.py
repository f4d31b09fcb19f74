from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfci.errors import ResultsFormatError
from perfci.model import RunResult
from perfci.schema import SCHEMA_VERSION, dump_results, load_results, parse_results, run_to_dict

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
        (lambda d: d["cases"][0].pop("device"), "cases/0"),
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


def test_documented_schema_is_the_shipped_one() -> None:
    docs = Path(__file__).parents[2] / "docs" / "results-v1.schema.json"
    shipped = Path(__file__).parents[2] / "perfci" / "schemas" / "results-v1.schema.json"
    assert json.loads(docs.read_text()) == json.loads(shipped.read_text())
