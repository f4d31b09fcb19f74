"""Progress of a measurement, as typed events: what the engine and the A/B report while they work, for a
progress bar or a CI log line to show (perfci/cli). Each event says itself in words (`describe`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class RoundStarted:
    """A worker began `case` in round `round` (1-based; in an A/B, the pair); `done` of `total` case-rounds of
    this runner are finished."""

    case: str
    round: int
    done: int
    total: int

    def describe(self) -> str:
        return f"round {self.round}: {self.case}"


@dataclass(frozen=True)
class LookDone:
    """An A/B's look `look` is analysed: `decided` of `cases` cases have a verdict."""

    look: int
    decided: int
    cases: int

    def describe(self) -> str:
        return f"look {self.look}: {self.decided} of {self.cases} cases decided"


@dataclass(frozen=True)
class PairsDone:
    """An A/B has finished `pairs` pairs in all (reported after each block of pairs, engine/lockstep.py)."""

    pairs: int

    def describe(self) -> str:
        return f"{self.pairs} pair(s) done"


ProgressEvent = RoundStarted | LookDone | PairsDone
ProgressFn = Callable[[ProgressEvent], None]
