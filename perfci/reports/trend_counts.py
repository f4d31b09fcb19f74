"""The counts a trend headline gives, made from the calls its rows make, in one place: the terminal table, the
Markdown summary, the `--since` digest and the HTML page count the same way, so a headline never counts a
change that its rows call too early to call.

A row's call: `worse` or `better` when a change point (enough runs on each side of it) moved the metric that
way, `steady` when none did, `uncalled` for a step in the latest runs that is still too recent or too early to
call (store/movers.py: it needs more runs before it is a change).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from perfci.store.movers import WindowMove
from perfci.store.trend import TOO_FEW_RUNS, Trend


class Call(StrEnum):
    WORSE = "worse"
    BETTER = "better"
    STEADY = "steady"
    UNCALLED = "uncalled"


_OF_STATUS = {"worse": Call.WORSE, "better": Call.BETTER, "steady": Call.STEADY, TOO_FEW_RUNS: Call.UNCALLED}


def trend_call(t: Trend) -> Call:
    """A case's row: what its last change point did, if it has one."""
    return _OF_STATUS[t.status()]


def move_call(m: WindowMove) -> Call:
    """A row of the `--since` digest: a change point is called; a recent step is not yet."""
    if not m.called:
        return Call.UNCALLED
    return Call.WORSE if m.worse else Call.BETTER


@dataclass(frozen=True)
class HeadlineCounts:
    worse: int = 0
    better: int = 0
    steady: int = 0
    uncalled: int = 0

    @property
    def total(self) -> int:
        return self.worse + self.better + self.steady + self.uncalled

    def uncalled_phrase(self) -> str:
        """`, N too soon to call` when there are any (to follow the worse and better counts; the rows say whether
        too early, the history being short, or too recent)."""
        return f", {self.uncalled} too soon to call" if self.uncalled else ""


def headline_counts(calls: Iterable[Call]) -> HeadlineCounts:
    """The headline's counts: the rows' calls, counted."""
    n = Counter(calls)
    return HeadlineCounts(n[Call.WORSE], n[Call.BETTER], n[Call.STEADY], n[Call.UNCALLED])
