"""The counts a trend headline gives, made from the calls its rows make, in one place: the terminal table, the
Markdown summary, the `--since` digest and the HTML page count the same way, so a headline never counts a
change that its rows call too early to call.

A row's call: `worse` or `better` when a change point (enough runs on each side of it) moved the metric that
way, `steady` when none did and the latest runs did not step away either, `too few runs` for a series too short
to show a change point, `too recent` for a step in the latest runs that is still too recent or too early to call
(store/movers.py: it needs more runs before it is a change). The headline counts the last two apart, in the
words of their rows. The `--since` digest finds such a
step with the same function (`window_moves`), so a case it counts as too soon to call is a `too recent` row here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from enum import StrEnum

from perfci.store.movers import WindowMove, window_moves
from perfci.store.trend import STATUS_RANK, TOO_FEW_RUNS, Trend

DEFAULT_MIN_EFFECT = 0.03  # `perfci trend --min-effect`'s default: the smallest step a recent move is taken for
TOO_RECENT = "too recent"  # a row's status: no change point, but the latest runs stepped away: too soon to call
# the order rows are listed in: the change points' (store/trend.py: worse, better, steady, too few runs), with a move
# too recent to call just before steady
_STEADY = STATUS_RANK["steady"]
ROW_RANK = {**{word: rank + (rank >= _STEADY) for word, rank in STATUS_RANK.items()}, TOO_RECENT: _STEADY}

RecentSteps = Collection[tuple[str, str]]  # (runner, case id) of the rows whose latest runs stepped away


class Call(StrEnum):
    WORSE = "worse"
    BETTER = "better"
    STEADY = "steady"
    TOO_RECENT = "too recent"  # the latest runs stepped away: the next runs will tell
    TOO_FEW = "too few runs"  # the series is too short to show a change point


_OF_STATUS = {
    "worse": Call.WORSE,
    "better": Call.BETTER,
    "steady": Call.STEADY,
    TOO_RECENT: Call.TOO_RECENT,
    TOO_FEW_RUNS: Call.TOO_FEW,
}


def recent_steps(
    items: Iterable[Trend], cutoff: str = "", min_effect: float = DEFAULT_MIN_EFFECT
) -> frozenset[tuple[str, str]]:
    """(runner, case id) of each trend whose latest runs moved by a step that is too soon to call, the step's first
    run started at or after `cutoff` (UTC text as stored; '' for any): the rows the `--since` digest counts as too
    soon to call. `items` must carry every change point (not a `--since` view's): the level a step is measured
    from is the one since the last change point."""
    moves, _, _ = window_moves(items, cutoff, min_effect)
    return frozenset((m.runner, m.case_id) for m in moves if not m.called)


def row_status(t: Trend, recent: RecentSteps = ()) -> str:
    """The status word of a case's row: its change points' (`Trend.status`), except `too recent` for a series
    without one whose latest runs stepped away (`recent`, from `recent_steps`)."""
    status = t.status()
    return TOO_RECENT if status == "steady" and (t.runner, t.case_id) in recent else status


def trend_call(t: Trend, recent: RecentSteps = ()) -> Call:
    """A case's row: what its last change point did, if it has one; uncalled for a step in its latest runs that
    is too soon to call (`recent`) and for a series too short to show a change point."""
    return _OF_STATUS[row_status(t, recent)]


def move_call(m: WindowMove) -> Call:
    """A row of the `--since` digest: a change point is called; a recent step is not yet."""
    if not m.called:
        return Call.TOO_RECENT
    return Call.WORSE if m.worse else Call.BETTER


@dataclass(frozen=True)
class HeadlineCounts:
    worse: int = 0
    better: int = 0
    steady: int = 0
    too_recent: int = 0
    too_few: int = 0

    @property
    def uncalled(self) -> int:
        return self.too_recent + self.too_few

    @property
    def total(self) -> int:
        return self.worse + self.better + self.steady + self.uncalled

    def uncalled_phrase(self) -> str:
        """`, N too recent to call, M with too few runs` for those there are (to follow the worse, better and
        steady counts), in the words of the rows they count."""
        parts = [f"{self.too_recent} too recent to call"] if self.too_recent else []
        parts += [f"{self.too_few} with too few runs"] if self.too_few else []
        return "".join(f", {p}" for p in parts)


def headline_counts(calls: Iterable[Call]) -> HeadlineCounts:
    """The headline's counts: the rows' calls, counted."""
    n = Counter(calls)
    return HeadlineCounts(n[Call.WORSE], n[Call.BETTER], n[Call.STEADY], n[Call.TOO_RECENT], n[Call.TOO_FEW])


def window_words(since: str) -> str:
    """A `--since` window in a title: `the last 7d` for a span back from now (12h, 7d, 4w), `since 2026-12-07` for
    a date or a time."""
    raw = since.strip()
    return f"the last {raw}" if raw[:-1].isdigit() and raw[-1:].lower() in ("h", "d", "w") else f"since {raw}"


def counted_over(since: str | None) -> str:
    """What a headline's worse and better count over: the `--since` window (`in the last 7d`, `since 2026-12-07`),
    else each case's last change point. The table, the Markdown summary and the HTML page say it alike."""
    if not since:
        return "since their last change point"
    words = window_words(since)
    return f"in {words}" if words.startswith("the last") else words
