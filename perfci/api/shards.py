"""Shards: `--shard I/N` splits a suite's cases over N jobs, deterministically and evenly.

The selected cases are put in the order of a stable hash of their ids (sha256), then dealt round-robin: shard I
gets the cases at positions I-1, I-1+N, ... Every job of a matrix selects the same cases, so all agree on the split
without talking to each other; the order of the case list does not matter; shard sizes differ by at most one, so
no shard is empty while there are at least as many cases as shards. Shards 1..N together hold every case once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from perfci.errors import UsageError

SHARD_KEY = "shard"  # a sharded run's results settings: "I/N" (`perfci merge` checks that every shard is there)


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def pick(self, case_ids: Iterable[str]) -> set[str]:
        """The ids of `case_ids` that this shard holds."""
        return {cid for cid, shard in split(case_ids, self.count).items() if shard == self.index}


def split(case_ids: Iterable[str], count: int) -> dict[str, int]:
    """Each case id's 1-based shard among `count` shards (see the module docstring)."""
    ordered = sorted(set(case_ids), key=lambda cid: (hashlib.sha256(cid.encode("utf-8")).digest(), cid))
    return {cid: 1 + rank % count for rank, cid in enumerate(ordered)}


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
        hint="use at most as many shards as cases",
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
