"""Progress where no terminal is attached (CI logs): one plain line on stderr at least every 15 s.

`PlainProgress` is a progress callback (message, done, total) like the rich bar's. It remembers the latest
state and writes a line when `every_s` has passed since the last one; a heartbeat thread ticks it once a
second, so a line comes even while one long case is being measured and no event arrives. The clock, the
writer and the heartbeat's period are injectable, so tests need no sleeps.

Lines say how far the work is: for an A/B the pairs run and the cases decided (the engine's typed events,
perfci/engine/progress.py) and the time left in the budget; for a run the case-rounds done and an estimate of the
time left.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

from perfci.engine.progress import LookDone, PairsDone, ProgressEvent


class PlainProgress:
    def __init__(
        self,
        label: str,
        write: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        every_s: float = 10.0,
        budget_s: float | None = None,
        pairs_planned: int | None = None,
        tick_s: float = 1.0,
    ) -> None:
        self.label, self.write, self.clock = label, write, clock
        self.every_s, self.budget_s, self.pairs_planned, self.tick_s = every_s, budget_s, pairs_planned, tick_s
        self.start = clock()
        self.last: float | None = None
        self.message, self.done, self.total = "starting", 0, 0
        self.pair = 0  # the highest pair a worker started on
        self.pairs_done = 0
        self.decided: tuple[int, int] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __call__(self, event: ProgressEvent) -> None:
        with self._lock:
            if isinstance(event, LookDone):
                self.decided = (event.decided, event.cases)
            elif isinstance(event, PairsDone):
                self.pairs_done = event.pairs
            else:
                self.pair = max(self.pair, event.round)
                self.message, self.done, self.total = event.describe(), event.done, event.total
        self.tick()

    def tick(self) -> None:
        """Write a line when `every_s` has passed since the last one (the first update writes at once)."""
        with self._lock:
            now = self.clock()
            if self.last is not None and now - self.last < self.every_s:
                return
            self.last = now
            line = self.line(now)
        self.write(line)

    def line(self, now: float) -> str:
        elapsed = now - self.start
        parts = [f"{self.label}: {elapsed:.0f} s"]
        if self.pairs_planned is not None:
            parts.append(self._pairs())
            if self.decided is not None:
                parts.append(f"{self.decided[0]} of {self.decided[1]} cases decided")
        elif self.total:
            parts.append(f"{self.done} of {self.total} case-rounds done")
        if self.budget_s is not None:
            parts.append(f"{max(0.0, self.budget_s - elapsed):.0f} s left of the {self.budget_s:.0f} s budget")
        elif self.done and self.total:
            parts.append(f"about {elapsed / self.done * (self.total - self.done):.0f} s left")
        return ", ".join(parts) + f"; now: {self.message}"[:200]

    def _pairs(self) -> str:
        """The pairs in flight (several while a block of pairs sets up together) and those done."""
        done, planned = self.pairs_done, self.pairs_planned
        if self.pair <= done:
            return f"{done} of up to {planned} pairs done"
        running = f"pair {self.pair}" if self.pair == done + 1 else f"pairs {done + 1}-{self.pair}"
        return f"{running} of up to {planned} running ({done} done)"

    def _beat(self) -> None:
        while not self._stop.wait(self.tick_s):
            self.tick()

    def __enter__(self) -> PlainProgress:
        self._thread = threading.Thread(target=self._beat, name="perfci-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
