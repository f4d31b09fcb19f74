"""Progress without a terminal: a plain line at least every 15 s during `perfci ab` and `perfci run`, with pairs
done, cases decided and the time left. The clock is injected: no sleeps."""

from __future__ import annotations

import itertools

from perfci.cli.progress import PlainProgress
from perfci.engine.progress import LookDone, PairsDone, RoundStarted


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_ab_prints_a_line_at_least_every_15_s_with_pairs_decided_and_budget() -> None:
    clock, lines, times = Clock(), [], []

    def write(line: str) -> None:
        lines.append(line)
        times.append(clock.now)

    progress = PlainProgress("perfci a/b", write, clock, budget_s=900.0, pairs_planned=20)
    # an A/B as the engine reports it: a round started per case and side, rarely (long cases), and one look
    for second in range(0, 301):
        clock.now = float(second)
        if second % 37 == 0:  # events come far apart: the heartbeat (tick) must fill the gaps
            if second:
                progress(PairsDone(second // 37))
            progress(RoundStarted("wl.loop[which=slowed]@cpu", second // 37 + 1, 0, 0))
        if second == 150:
            progress(LookDone(1, 1, 2))
        progress.tick()  # what the heartbeat thread does once a second
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert times[0] == 0.0 and max(gaps) <= 15.0 and times[-1] >= 285.0
    last = lines[-1]
    assert "pair 9 of up to 20 running (8 done)" in last
    assert "1 of 2 cases decided" in last
    assert "600 s left of the 900 s budget" in last
    assert "now: round 9: wl.loop[which=slowed]@cpu" in last


def test_a_block_of_pairs_shows_every_pair_in_flight() -> None:
    """Pairs 2-4 set up together (engine/lockstep.py): the line names them all until the block is done."""
    lines: list[str] = []
    progress = PlainProgress("perfci a/b", lines.append, Clock(), every_s=0.0, pairs_planned=4)
    progress(RoundStarted("a@cuda", 1, 0, 0))
    assert "pair 1 of up to 4 running (0 done)" in lines[-1]
    progress(PairsDone(1))
    assert "1 of up to 4 pairs done" in lines[-1]
    for pair in (2, 3, 4):
        progress(RoundStarted("a@cuda", pair, 0, 0))
    assert "pairs 2-4 of up to 4 running (1 done)" in lines[-1]
    progress(PairsDone(4))
    assert "4 of up to 4 pairs done" in lines[-1]


def test_run_lines_count_case_rounds_and_estimate_the_time_left() -> None:
    clock, lines = Clock(), []
    progress = PlainProgress("perfci run", lines.append, clock)
    progress(RoundStarted("a@cpu", 1, 0, 10))
    clock.now = 20.0
    progress(RoundStarted("b@cpu", 2, 4, 10))
    assert lines[-1].startswith("perfci run: 20 s, 4 of 10 case-rounds done, about 30 s left")


def test_the_heartbeat_thread_ticks_until_closed() -> None:
    clock, lines = Clock(), []

    def advancing() -> float:
        clock.now += 20.0  # every reading is 20 s later: each heartbeat tick writes a line
        return clock.now

    with PlainProgress("perfci run", lines.append, advancing, tick_s=0.001):
        for _ in range(10**8):  # bounded: a broken heartbeat fails instead of hanging
            if len(lines) >= 3:
                break
    assert len(lines) >= 3
