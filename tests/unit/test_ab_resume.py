"""What `perfci ab --resume` keeps of an interrupted A/B: complete pairs only, and only for the same cases."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfci.ab.pairs import kept_pairs
from perfci.api.ab import ABRequest, ab_settings
from perfci.api.settings import Settings
from perfci.errors import UsageError
from perfci.format.schema import dump_results
from tests.conftest import make_case, make_run


def _side(out: Path, name: str, rounds: dict[str, int]) -> list:  # type: ignore[type-arg]
    cases = [make_case(case, 1e-3, rounds=n) for case, n in rounds.items()]
    dump_results(make_run(cases), out / name / "results.json")
    return [c.spec for c in cases]


def test_only_pairs_complete_on_both_sides_are_kept(tmp_path: Path) -> None:
    specs_a = _side(tmp_path, "base", {"a": 3, "b": 3})
    specs_b = _side(tmp_path, "head", {"a": 3, "b": 2})  # killed while pair 3 was half measured
    kept = kept_pairs(tmp_path, specs_a, specs_b)
    assert kept is not None
    run_a, run_b, pairs = kept
    assert pairs == 2
    assert [len(c.rounds) for c in (*run_a.cases, *run_b.cases)] == [2, 2, 2, 2]


def test_a_round_missing_in_the_middle_ends_the_kept_pairs(tmp_path: Path) -> None:
    specs_a = _side(tmp_path, "base", {"a": 4})
    case = make_case("a", 1e-3, rounds=4)
    gappy = replace(case, rounds=tuple(r for r in case.rounds if r.index != 1))
    dump_results(make_run([gappy]), tmp_path / "head" / "results.json")
    kept = kept_pairs(tmp_path, specs_a, [case.spec])
    assert kept is not None and kept[2] == 1


def test_nothing_to_resume_and_other_cases(tmp_path: Path) -> None:
    specs = _side(tmp_path, "base", {"a": 2})
    assert kept_pairs(tmp_path, specs, specs) is None  # no head side on disk
    _side(tmp_path, "head", {"a": 2})
    other = [make_case("z", 1e-3).spec]
    with pytest.raises(UsageError, match="holds an A/B of other cases"):
        kept_pairs(tmp_path, specs, other)


def test_resume_needs_an_output_folder() -> None:
    with pytest.raises(UsageError, match="--resume needs --out"):
        ab_settings(Settings({}), ABRequest(base_rev="HEAD", resume=True))
