"""Shards: `--shard I/N` splits a suite's cases over N jobs, deterministically and evenly.

By count (the default), the selected cases are put in the order of a stable hash of their ids (sha256), then dealt
round-robin: shard I gets the cases at positions I-1, I-1+N, ... Shard sizes differ by at most one.

By time (`--durations FILE`, the results.json of an earlier run), each case weighs what it took there: its rounds'
sample times plus their warm-ups, plus each round's share of what the run spent outside sampling (starting
workers, setting cases up); a case the file lacks weighs the median of those it has. The cases are taken longest
first and each goes to the shard with the least time so far (then the fewest cases, then the lowest index), so the
jobs end at about the same time. Every job of a matrix must be given the same file.

Either way, every job selects the same cases and so agrees on the split without talking to the others; the order
of the case list does not matter; no shard is empty while there are at least as many cases as shards (the first N
cases go to N different shards); shards 1..N together hold every case once.
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from perfci.errors import UsageError
from perfci.format.model import RunResult
from perfci.format.schema import load_results

SHARD_KEY = "shard"  # a sharded run's results settings: "I/N" (`perfci merge` checks that every shard is there)
# ... and, split by time, a digest of the durations: shards split by different files may miss a case between them,
# and `perfci merge` refuses parts whose settings differ
DURATIONS_KEY = "shard_durations"
# ... and the selection the shards were split from: its case count and a digest of its ids (shards of `-k a` and of
# `-k b` merged into a run that looked complete and lacked cases)
SELECTION_KEY = "shard_selection"


def selection_text(case_ids: Iterable[str]) -> str:
    """`12 cases, sha256:...`: the whole selection a shard was split from (SELECTION_KEY)."""
    ids = sorted(set(case_ids))
    return f"{len(ids)} cases, sha256:{hashlib.sha256(repr(ids).encode('utf-8')).hexdigest()[:16]}"


def selection_size(text: object) -> int | None:
    """The case count of a SELECTION_KEY value; None when there is none."""
    head = str(text).split(" ", 1)[0] if isinstance(text, str) else ""
    return int(head) if head.isdigit() else None


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int
    # (case id, seconds) from `--durations`: split by time; empty: by count
    durations: tuple[tuple[str, float], ...] = ()

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def pick(self, case_ids: Iterable[str]) -> set[str]:
        """The ids of `case_ids` that this shard holds."""
        shards = split(case_ids, self.count, dict(self.durations) or None)
        return {cid for cid, shard in shards.items() if shard == self.index}

    def settings(self) -> dict[str, str]:
        """What a sharded run records in its results settings."""
        if not self.durations:
            return {SHARD_KEY: str(self)}
        digest = hashlib.sha256(repr(self.durations).encode("utf-8")).hexdigest()[:16]
        return {SHARD_KEY: str(self), DURATIONS_KEY: f"sha256:{digest}"}

    def by_durations(self, path: Path | None) -> Shard:
        """This shard, split by the durations recorded in the results file at `path` (None: by count)."""
        if path is None:
            return self
        return Shard(self.index, self.count, tuple(sorted(case_durations(load_results(path)).items())))


def _hash_key(cid: str) -> tuple[bytes, str]:
    return hashlib.sha256(cid.encode("utf-8")).digest(), cid


def split(case_ids: Iterable[str], count: int, durations: Mapping[str, float] | None = None) -> dict[str, int]:
    """Each case id's 1-based shard among `count` shards: by count, or by time when `durations` (seconds per case
    id) is given (see the module docstring)."""
    ordered = sorted(set(case_ids), key=_hash_key)
    if not durations:
        return {cid: 1 + rank % count for rank, cid in enumerate(ordered)}
    fill = statistics.median(durations.values())
    weight = {cid: max(0.0, durations.get(cid, fill)) for cid in ordered}
    loads = [(0.0, 0, index) for index in range(1, count + 1)]  # (seconds, cases, shard index)
    out: dict[str, int] = {}
    for cid in sorted(ordered, key=lambda c: -weight[c]):  # a stable sort: ties keep the hash order
        seconds, cases, index = min(loads)
        out[cid] = index
        loads[index - 1] = (seconds + weight[cid], cases + 1, index)
    return out


def _seconds(start: str, end: str) -> float:
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except ValueError:
        return 0.0


def case_durations(run: RunResult) -> dict[str, float]:
    """Seconds each case of `run` took, estimated from what the file records: per round, the samples (each the
    time of `iterations` calls) and the warm-up, plus the round's share of the run's time outside sampling (the
    run's start to finish less everything measured, over its rounds). Cases without rounds are left out."""
    measured = {c.id: sum(sum(r.samples) + r.warmup_s for r in c.rounds) for c in run.cases if c.rounds}
    rounds = {c.id: len(c.rounds) for c in run.cases if c.rounds}
    outside = _seconds(run.started_at, run.finished_at) - sum(measured.values())
    per_round = max(0.0, outside) / max(1, sum(rounds.values()))
    return {cid: seconds + per_round * rounds[cid] for cid, seconds in measured.items()}


def split_text(shards: Mapping[str, int], count: int, durations: Mapping[str, float] | None = None) -> str:
    """One line on how the cases were split: cases per shard, and the estimated seconds with durations."""
    sizes = [sum(1 for s in shards.values() if s == i) for i in range(1, count + 1)]
    text = f"{len(shards)} case(s) over {count} shard(s): {', '.join(map(str, sizes))}"
    if not durations:
        return text + " (by count)"
    fill = statistics.median(durations.values())
    seconds = [sum(durations.get(c, fill) for c, s in shards.items() if s == i) for i in range(1, count + 1)]
    return text + f"; about {', '.join(f'{t:.3g}' for t in seconds)} s (by the recorded durations)"


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


def empty_shard_note(shard: Shard) -> str:
    """What a run says when its shard holds no case (there are more shards than cases): its results file is
    written with no case, so that `perfci merge` finds every shard of the run."""
    return f"note: shard {shard} holds no case (more shards than cases): its results file is empty."


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
