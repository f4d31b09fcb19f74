"""Shard assignment: stable (a hash of the case id), complete and disjoint; `I/N` parsing."""

from __future__ import annotations

import hashlib

import pytest

from perfci.api.shards import Shard, parse_shard, shard_of
from perfci.errors import UsageError

IDS = [f"suite.case[n={n},dtype=float32]@cpu" for n in range(200)]


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_shards_partition_the_cases(count: int) -> None:
    held = [[cid for cid in IDS if Shard(i, count).holds(cid)] for i in range(1, count + 1)]
    assert sorted(cid for part in held for cid in part) == sorted(IDS)
    assert all(held)  # 200 cases: every shard gets some


def test_assignment_depends_on_the_id_not_the_position() -> None:
    before = {cid: shard_of(cid, 4) for cid in IDS}
    after = {cid: shard_of(cid, 4) for cid in reversed([*IDS, "new.case@cpu"])}
    assert all(after[cid] == shard for cid, shard in before.items())
    assert shard_of("a@cpu", 4) == 1 + int.from_bytes(hashlib.sha256(b"a@cpu").digest()[:8], "big") % 4


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0", "1/2/3"])
def test_bad_shards_are_refused(text: str) -> None:
    with pytest.raises(UsageError):
        parse_shard(text)


def test_parse() -> None:
    assert parse_shard("2/5") == Shard(2, 5) and str(Shard(2, 5)) == "2/5" and parse_shard(None) is None
