"""Shards: `--shard I/N` splits a suite's cases over N jobs, deterministically.

A case belongs to shard `1 + sha256(case id) mod N`: a stable hash of the id, not the case's position in a list,
so adding, removing or reordering cases moves no other case between shards, and every job of a matrix agrees on
the split without talking to the others. Shards 1..N together hold every case exactly once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from perfci.errors import UsageError

SHARD_KEY = "shard"  # a sharded run's results settings: "I/N" (`perfci merge` checks that every shard is there)


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, case_id: str) -> bool:
        return shard_of(case_id, self.count) == self.index


def shard_of(case_id: str, count: int) -> int:
    """The 1-based shard of `case_id` among `count` shards."""
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return 1 + int.from_bytes(digest[:8], "big") % count


def parse_shard(text: str | None) -> Shard | None:
    """`I/N` (1 <= I <= N) as a Shard; None stays None."""
    if text is None:
        return None
    parts = text.strip().split("/")
    try:
        if len(parts) != 2:
            raise ValueError
        index, count = int(parts[0]), int(parts[1])
    except ValueError:
        raise UsageError(f"--shard {text!r}: expected I/N, e.g. 1/4.") from None
    if count < 1 or not 1 <= index <= count:
        raise UsageError(f"--shard {text}: I must be between 1 and N (N >= 1).")
    return Shard(index, count)


def empty_shard_error(shard: Shard, total: int) -> UsageError:
    return UsageError(
        f"shard {shard} holds none of the {total} selected case(s).",
        hint="use fewer shards than cases (cases are split by a hash of their id, so small suites split unevenly)",
    )


def shard_text_parts(text: object) -> tuple[int, int] | None:
    """(I, N) of a results file's `settings["shard"]`; None when it is not an "I/N" text (files written before
    perfci recorded the shard have none)."""
    if not isinstance(text, str):
        return None
    try:
        shard = parse_shard(text)
    except UsageError:
        return None
    return (shard.index, shard.count) if shard is not None else None
