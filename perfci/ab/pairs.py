"""The pairs of an A/B: how they are run (blocks of pairs whose workers start together, spares started ahead, the
coin-flip order of paired rounds) and which pairs an interrupted A/B left to resume (`kept_pairs`)."""

from __future__ import annotations

import functools
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import psutil

from perfci.compare.policy import AB_DEFAULTS
from perfci.engine.lockstep import pairs_at_once, run_lockstep_block
from perfci.engine.progress import PairsDone, ProgressFn
from perfci.engine.runner import Runner
from perfci.errors import PerfciError, UsageError
from perfci.format.comparison import decode_comparison
from perfci.format.model import CaseResult, CaseSpec, RunResult
from perfci.format.schema import load_results
from perfci.interrupts import stop_if_interrupted
from perfci.options import PAIRS, PAIRS_AT_ONCE

MIN_PAIRS = int(PAIRS.least())  # the fewest pairs an A/B stops at when its time budget runs out


@dataclass
class PairedRunner:
    """Two runners measured in pairs; pair i is round i on both sides, in a coin-flip order."""

    base: Runner
    head: Runner
    rng: random.Random
    next_index: int = 0
    order: list[str] = field(default_factory=list)
    blocks: list[int] = field(default_factory=list)  # pairs each lockstep block started together

    lockstep: bool = True
    phases: dict[str, float] = field(default_factory=dict)  # where the pairs' time went (engine/lockstep.py)
    clock: Callable[[], float] = time.monotonic
    at_once: int = PAIRS_AT_ONCE.default  # pairs started together; 0: engine/lockstep.pairs_at_once
    extra: int = AB_DEFAULTS.extra  # pairs a further look adds at most (how many spares a look's end starts)
    progress: ProgressFn | None = None  # told the pairs done after each block (`PairsDone`)

    def prestart(self, first: int, count: int) -> None:
        """Start the worker processes of pairs `first`..`first + count - 1` ahead (they wait for their jobs);
        speculative at the end of a look, so `discard_spares` stops them when no pair follows."""
        for index in range(first, first + count):
            self.base.prestart(index, "A")
            self.head.prestart(index, "B")

    def discard_spares(self) -> None:
        self.base.discard_spares()
        self.head.discard_spares()

    def block_size(self, remaining: int, ahead: bool = False) -> int:
        """Pairs to start together next, at most `remaining` (engine/lockstep.pairs_at_once). The A/B's first pair
        runs alone: later pairs' jobs use what its rounds say (the clock a case is decided on, the imports to
        preload, how much memory a worker takes). `ahead`: how many pairs' spares to start before the first
        pair's results are in (by the CPUs alone; once they are in, memory bounds it too)."""
        measured = self.base.has_rounds() and self.head.has_rounds()
        if not measured and not ahead:
            return 1
        memory = self._memory() if measured else (None, None, None, None)
        return max(1, min(remaining, pairs_at_once(self.at_once, len(os.sched_getaffinity(0)), *memory)))

    def _memory(self) -> tuple[int | None, int | None, int | None, int | None]:
        """Free host memory, a worker's host memory, the GPU's memory and a worker's GPU memory (the larger of
        the two sides' workers), for `pairs_at_once`."""
        (host_a, dev_a, total_a), (host_b, dev_b, total_b) = self.base.worker_footprint(), self.head.worker_footprint()
        host, device = max(host_a or 0, host_b or 0) or None, max(dev_a or 0, dev_b or 0) or None
        return psutil.virtual_memory().available, host, total_a or total_b, device

    def pairs(self, n: int, only: list[str] | None, last_look: bool = False, deadline: float | None = None) -> int:
        """`n` more pairs, in blocks whose workers start together (`block_size`); each block starts the next
        block's workers as it finishes (`prestart`), except the last block of the `last_look`, which no pair can
        follow. Past `deadline` (on `clock`) no further pair or block starts once the A/B holds `MIN_PAIRS`
        pairs (an interval needs two). Returns the pairs run."""
        k = 0
        while k < n:
            stop_if_interrupted()  # a Ctrl-C whose KeyboardInterrupt was lost stops the A/B before its next pair
            past = deadline is not None and self.clock() >= deadline  # read once: the checks below must agree
            if past and self.next_index >= MIN_PAIRS:
                break
            i = self.next_index
            if not self.lockstep:
                first, second = (self.base, self.head) if self.rng.random() < 0.5 else (self.head, self.base)
                self.order.append("AB" if first is self.base else "BA")
                t0 = self.clock()
                first.run_round(i, only)
                second.run_round(i, only)
                self.phases["rounds"] = self.phases.get("rounds", 0.0) + self.clock() - t0
                self.next_index += 1
                k += 1
                self._done()
                continue
            size = self.block_size(n - k)
            if past:  # only the pairs still short of MIN_PAIRS, and no spares for a block that cannot follow
                size = min(size, MIN_PAIRS - self.next_index)
            after = n - k - size  # pairs of this look after the block
            ahead = None
            if not past and (after or not last_look):
                count = self.block_size(after if after else self.extra, ahead=True)
                ahead = functools.partial(self.prestart, i + size, count)
            run_lockstep_block(self.base, self.head, list(range(i, i + size)), only, self.rng, self.phases,
                               self.clock, ahead)  # fmt: skip
            self.order.extend(["lockstep"] * size)
            self.blocks.append(size)
            self.next_index += size
            k += size
            self._done()
        return k

    def _done(self) -> None:
        if self.progress is not None:
            self.progress(PairsDone(self.next_index))


def kept_pairs(
    out_dir: Path,
    specs_a: list[CaseSpec],
    specs_b: list[CaseSpec],
    identities: tuple[dict[str, str], dict[str, str]] | None = None,
) -> tuple[RunResult, RunResult, int] | None:
    """What an interrupted A/B left in `out_dir` (`base/results.json` and `head/results.json`, written after every
    pair): both runs, with the rounds of the first K pairs, K being the pairs that every healthy case completed on
    both sides. A half pair (one side measured when the A/B was killed) is not a pair and is measured again. None
    when there is nothing to resume; a UsageError when the folder holds an A/B of other cases."""
    paths = out_dir / "base" / "results.json", out_dir / "head" / "results.json"
    if not all(p.exists() for p in paths):
        return None
    run_a, run_b = load_results(paths[0]), load_results(paths[1])
    if {c.id for c in run_a.cases} != {s.id for s in specs_a} or {c.id for c in run_b.cases} != {s.id for s in specs_b}:
        raise UsageError(
            f"--resume: {out_dir} holds an A/B of other cases.",
            hint="resume with the same revisions, paths and filters, or give another --out",
        )
    if identities is not None:
        for run, wanted, side in ((run_a, identities[0], "base"), (run_b, identities[1], "head")):
            if (held := _identity(run)) != wanted:
                raise UsageError(
                    f"--resume: {out_dir} holds an A/B of {_difference(held, wanted, side)}.",
                    hint="resume with the same revisions and workload files, or give another --out",
                )
    healthy = [c for run in (run_a, run_b) for c in run.cases if not c.errors]
    pairs = min((_leading_rounds(c) for c in healthy), default=0)
    if _finished_with(out_dir / "comparison.json", pairs):
        # it ran its looks to the end: continuing it measured more pairs than its rules asked for, and moved a verdict
        raise UsageError(
            f"--resume: the A/B in {out_dir} finished; there is nothing to continue.",
            hint=f"its verdicts are in {out_dir / 'comparison.json'}; to measure again, give another --out",
        )

    def first_pairs(run: RunResult) -> RunResult:
        cases = tuple(replace(c, rounds=tuple(r for r in c.rounds if r.index < pairs)) for c in run.cases)
        return replace(run, cases=cases)

    return first_pairs(run_a), first_pairs(run_b), pairs


SIDE_KEY = "ab_side"  # results settings of an A/B side: what `--resume` must find again (orchestrate.side_identity)


def _finished_with(path: Path, pairs: int) -> bool:
    """Whether the comparison an A/B writes when it ends is there, for exactly the pairs on disk."""
    try:
        ab = decode_comparison(path.read_bytes(), str(path)).settings.get("ab")
    except (OSError, PerfciError):  # none, or not one perfci wrote: not a finished A/B of these pairs
        return False
    return isinstance(ab, dict) and ab.get("pairs_run") == pairs


def _identity(run: RunResult) -> dict[str, str]:
    held = run.settings.get(SIDE_KEY)
    return {str(k): str(v) for k, v in held.items()} if isinstance(held, dict) else {}


def _difference(held: dict[str, str], wanted: dict[str, str], side: str) -> str:
    """What differs, in words: "another base revision (abc123 then, def456 now)"."""
    if not held:
        return f"unknown {side} revision (written by an earlier perfci)"
    if held.get("revision") != wanted.get("revision"):
        return (
            f"another {side} revision ({held.get('revision', '?')[:12]} then, {wanted.get('revision', '?')[:12]} now)"
        )
    if held.get("python") != wanted.get("python"):
        return f"another {side} interpreter ({held.get('python')} then, {wanted.get('python')} now)"
    return f"other {side} workload files (their content changed since)"


def _leading_rounds(case: CaseResult) -> int:
    """How many rounds from index 0 on the case has without a gap."""
    indexes, n = {r.index for r in case.rounds}, 0
    while n in indexes:
        n += 1
    return n
