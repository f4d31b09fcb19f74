"""Shard assignment: deterministic, even (sizes differ by at most one), complete and disjoint; `I/N` parsing."""

from __future__ import annotations

import pytest

from perfci.api.shards import Shard, parse_shard, split
from perfci.errors import UsageError

IDS = [f"suite.case[n={n},dtype=float32]@cpu" for n in range(200)]


@pytest.mark.parametrize(("cases", "count"), [(200, 1), (200, 2), (200, 3), (200, 7), (4, 2), (5, 4), (3, 3)])
def test_shards_partition_the_cases_evenly(cases: int, count: int) -> None:
    ids = IDS[:cases]
    held = [Shard(i, count).pick(ids) for i in range(1, count + 1)]
    assert sorted(cid for part in held for cid in part) == sorted(ids)
    sizes = [len(part) for part in held]
    assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1  # never empty with at least as many cases as shards


def test_four_cases_over_two_shards_split_two_and_two() -> None:
    ids = ["w.a@cpu", "w.b@cpu", "w.c@cpu", "w.d@cpu"]
    assert sorted(len(Shard(i, 2).pick(ids)) for i in (1, 2)) == [2, 2]


def test_the_split_depends_on_the_ids_not_their_order() -> None:
    assert split(IDS, 4) == split(list(reversed(IDS)), 4)
    assert Shard(1, 3).pick(IDS[:10]) == Shard(1, 3).pick(reversed(IDS[:10]))


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0", "1/2/3"])
def test_bad_shards_are_refused(text: str) -> None:
    with pytest.raises(UsageError):
        parse_shard(text)


def test_parse() -> None:
    assert parse_shard("2/5") == Shard(2, 5) and str(Shard(2, 5)) == "2/5" and parse_shard(None) is None
