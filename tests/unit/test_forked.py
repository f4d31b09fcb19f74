"""Forked helpers (perfci/forked.py) and the loading of several results files with one (schema.load_results_all):
a real fork each time; the helper can only save time, never change what is loaded or refused."""

from __future__ import annotations

import copy
import json
import os
import random
import signal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

import perfci.format.schema as schema
from perfci import forked
from perfci.errors import ResultsFormatError
from perfci.format.codec import DocumentFormat
from perfci.format.schema import SCHEMA_VERSION, load_results, load_results_all
from tests.unit.test_fuzz_loaders import SEEDS, VALID_RESULTS, _mutate

VALID = VALID_RESULTS

needs_helpers = pytest.mark.skipif(not forked.helpers_allowed(), reason="forked helpers need Linux and 2 CPUs")


def _children() -> set[int]:
    """This process's child processes (zombies included), from /proc."""
    out = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        children = (task / "children").read_text().split()
        out.update(int(c) for c in children)
    return out


@needs_helpers
def test_a_helper_answers_with_its_value() -> None:
    data = {"x": [1, 2, 3]}
    helper = forked.start_helper(lambda: [len(data["x"]), "ok"])
    assert helper is not None
    with helper:
        assert helper.answer() == [3, "ok"]
    assert helper.pid not in _children()


@needs_helpers
@pytest.mark.parametrize(
    "work",
    [
        lambda: 1 / 0,  # raises
        lambda: {1, 2},  # not JSON
        lambda: os.kill(os.getpid(), signal.SIGKILL),  # killed
        lambda: os._exit(3),  # exits with an error
    ],
)
def test_a_helper_that_fails_answers_none(work: Any) -> None:
    helper = forked.start_helper(work)
    assert helper is not None
    with helper:
        assert helper.answer() is None
    assert helper.pid not in _children()


@needs_helpers
def test_leaving_early_kills_and_reaps_the_helper() -> None:
    helper = forked.start_helper(lambda: __import__("time").sleep(60))
    assert helper is not None
    with pytest.raises(KeyboardInterrupt), helper:
        raise KeyboardInterrupt
    assert helper.pid not in _children()


def test_helpers_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(forked.OFF_VARIABLE, "0")
    assert not forked.helpers_allowed()
    assert forked.start_helper(lambda: 1) is None


# ---- several results files --------------------------------------------------------------------------------


def _write(folder: Path, name: str, doc: Any) -> Path:
    path = folder / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def _outcome(load: Any) -> tuple[str, Any]:
    try:
        return "loaded", load()
    except ResultsFormatError as exc:
        return "refused", str(exc)


@pytest.fixture
def helped(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every file size counts as large; the list records each helper started."""
    started: list[int] = []
    start = forked.start_helper

    def counting(work: Any) -> Any:
        helper = start(work)
        if helper is not None:
            started.append(helper.pid)
        return helper

    monkeypatch.setattr(schema, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(forked, "start_helper", counting)
    return started


def _bad_time() -> dict[str, Any]:
    doc = copy.deepcopy(VALID)
    doc["started_at"] = "2026-13-45T00:00:00Z"  # valid for the schema, refused by the semantic check
    return doc


def _twice() -> dict[str, Any]:
    doc = copy.deepcopy(VALID)
    doc["cases"].append(copy.deepcopy(doc["cases"][0]))  # a case id twice
    return doc


def _newer() -> dict[str, Any]:
    doc = copy.deepcopy(VALID)
    doc["schema_version"] = SCHEMA_VERSION + 1  # the helper refuses it: the usual way words why
    return doc


def _unknown_key() -> dict[str, Any]:
    doc = copy.deepcopy(VALID)
    doc["cases"][0]["surprise"] = 1  # builds (a dataclass passes over unknown keys), but the check refuses it
    return doc


def _broken() -> str:
    return json.dumps(VALID)[:-20]  # truncated


@needs_helpers
@pytest.mark.parametrize(
    "docs",
    [
        [VALID, VALID],
        [_bad_time(), VALID],
        [VALID, _bad_time()],
        [_twice(), _bad_time()],
        [_newer(), VALID],
        [_newer(), _twice()],
        [VALID, _unknown_key()],
        [_unknown_key(), _bad_time()],
        [VALID, _broken()],
        [_broken(), _bad_time()],
        [VALID, VALID, _newer(), VALID],
    ],
)
def test_the_same_runs_and_refusals_as_one_by_one(tmp_path: Path, helped: list[int], docs: list[Any]) -> None:
    paths = [_write(tmp_path, f"r{i}.json", d) for i, d in enumerate(docs)]
    calls: list[str] = []
    together = _outcome(lambda: load_results_all(paths, meanwhile=lambda: calls.append("meanwhile")))
    one_by_one = _outcome(lambda: [load_results(p) for p in paths])
    assert together == one_by_one
    assert len(helped) == 1  # a helper did the checking
    if together[0] == "loaded":
        assert calls == ["meanwhile"]


@needs_helpers
def test_a_failed_helper_leaves_the_work_to_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(DocumentFormat, "checks", lambda self, data: os._exit(1))  # the helper dies
    paths = [_write(tmp_path, "a.json", VALID), _write(tmp_path, "b.json", _twice())]
    assert _outcome(lambda: load_results_all(paths)) == _outcome(lambda: [load_results(p) for p in paths])


def test_without_helpers_the_files_load_one_by_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(forked.OFF_VARIABLE, "0")
    monkeypatch.setattr(schema, "PARALLEL_MIN_BYTES", 0)
    calls: list[str] = []
    paths = [_write(tmp_path, "a.json", VALID), _write(tmp_path, "b.json", VALID)]
    assert load_results_all(paths, meanwhile=lambda: calls.append("x")) == [load_results(p) for p in paths]
    assert calls == ["x"]


@needs_helpers
@given(SEEDS)
@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_mutated_pairs_load_as_one_by_one(tmp_path_factory: pytest.TempPathFactory, seed: int) -> None:
    """Pairs of mutated files through the helper: the same runs or the same first refusal as one by one."""
    rng = random.Random(seed)
    folder = tmp_path_factory.mktemp("pairs")
    paths = []
    for i in range(2):
        doc: Any = copy.deepcopy(VALID)
        for _ in range(rng.randint(0, 2)):
            doc = _mutate(doc, rng)
        paths.append(_write(folder, f"{i}.json", doc))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(schema, "PARALLEL_MIN_BYTES", 0)
        together = _outcome(lambda: load_results_all(paths))
    assert together == _outcome(lambda: [load_results(p) for p in paths])
