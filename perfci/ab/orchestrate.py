"""Same-machine A/B of two revisions: lockstep pairs (or paired rounds), adaptive extra pairs, one verdict per case.

Procedure (docs/compare.md explains why):
1. Check out each revision (`perfci.ab.revisions`), optionally build it, list its cases in a subprocess
   that imports the revision's code.
2. Look 1: `pairs` pairs. A pair is one base worker and one head worker, each measuring every active case
   (in a shuffled order); which of the two runs first is a fair coin per pair (seeded).
3. Decide per case with the paired rule at alpha / looks (Bonferroni over the planned looks). Cases still
   undecided on a timed metric (`needs_more`: inconclusive, or unchanged but at least half-way to the threshold
   or with an interval still reaching past it) get `extra` more pairs, for at most `looks` looks in all, while
   the time budget lasts. Every other case keeps the verdict of its last look, and so does a case that runs at
   two speeds by process on the clock it is decided on (`ab/bimodal.py`) or whose device clock the plan cannot
   settle (`ab/looks.out_of_reach`).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perfci.ab.bimodal import cap_process_modes
from perfci.ab.confirm import SETTLED_IF_BOUNDED, unsettled
from perfci.ab.environments import changes_line, describe, environment_changes
from perfci.ab.listing import adopt_uncollected, check_listings, list_cases, relative_source, unlisted_cases
from perfci.ab.looks import device_settled, out_of_reach, pairs_to_settle, reach_note
from perfci.ab.pairs import SIDE_KEY, PairedRunner, kept_pairs
from perfci.ab.revisions import Side, build
from perfci.compare.decide import compare_runs
from perfci.compare.policy import AB_DEFAULTS, DecisionSettings, practical_threshold
from perfci.engine.progress import LookDone, ProgressFn
from perfci.engine.resume import workloads_digest
from perfci.engine.runner import Runner, RunSettings
from perfci.errors import NoCasesError
from perfci.format.model import (
    CaseResult,
    CaseSpec,
    Comparison,
    Direction,
    GitInfo,
    MetricComparison,
    RunResult,
    Verdict,
)
from perfci.format.schema import dump_results
from perfci.metrics.registry import DEVICE_TIME, HOST_OVERHEAD, LATENCY_FAMILY, metric_def
from perfci.options import CPU_FIRST_LOOK, GPU_FIRST_LOOK, PAIRS_AT_ONCE
from perfci.workloads.discovery import PYTEST_PREFIX
from perfci.workloads.pytest_cases import PYTEST_SUITE


@dataclass(frozen=True)
class ABSettings:
    pairs: int | None = None  # pairs of the first look (None: `first_look`)
    extra: int = AB_DEFAULTS.extra  # pairs added per further look, to undecided cases only (see `needs_more`)
    looks: int = AB_DEFAULTS.looks  # looks in all (alpha is split evenly over them)
    budget_s: float = AB_DEFAULTS.budget_s  # no new look starts when it would overrun
    seed: int = 0
    run: RunSettings = field(default_factory=RunSettings)
    decision: DecisionSettings = field(default_factory=DecisionSettings)
    build_command: str | None = None
    lockstep: bool = True  # alternate base and head sample by sample within each pair (perfci/engine/lockstep.py)
    resume: bool = False  # continue the pairs an interrupted A/B left in its output folder (`kept_pairs`)
    pairs_at_once: int = PAIRS_AT_ONCE.default  # pairs whose workers start and set up together; 0: automatic


@dataclass(frozen=True)
class ABOutcome:
    comparison: Comparison
    base: RunResult
    head: RunResult
    pairs_run: int
    looks_run: int
    elapsed_s: float


def side_identity(side: Side, specs: list[CaseSpec]) -> dict[str, str]:
    """What one side of an A/B measured: its commit (or the working tree), its interpreter, and the content hash of
    its workload files. `--resume` continues a folder only when both sides' identities are the same again (it
    checked the case ids alone: an A/A resumed an interrupted A/B of two revisions without a word)."""
    return {
        "revision": side.commit or side.rev,
        "python": side.environment.label if side.environment is not None else "",
        "workloads": workloads_digest(s.source for s in specs),
    }


def first_look(pairs: int | None, specs: list[CaseSpec]) -> int:
    """`pairs` if given; else GPU_FIRST_LOOK when every case runs on a GPU, CPU_FIRST_LOOK otherwise."""
    if pairs is not None:
        return pairs
    gpu_only = bool(specs) and all(s.device.startswith("cuda") for s in specs)
    return GPU_FIRST_LOOK if gpu_only else CPU_FIRST_LOOK


def needs_more(row: MetricComparison, theta: float | None = None) -> bool:
    """Worth more pairs: `inconclusive`; or `unchanged`/`slower` with the estimate at least half-way to the
    threshold on the worse side (so a change near theta is decided between `slower` and `regression` on more data
    rather than at the first look); or, given the practical threshold `theta`, `unchanged`/`slower`/`faster` with
    an interval that still reaches past theta on the worse side (a `slower` row that may yet be a regression); or
    `regression`/`improvement` with an interval that still reaches back inside theta (a change that may yet be
    only `slower`/`faster`: decided at the first look, a 2.5% slowdown against 3% was called a regression in 2 of
    5 runs with 8 pairs, docs/compare.md). Only which cases get more pairs depends on this; the error rate is held
    by splitting alpha over the planned looks."""
    if not metric_def(row.metric).timed or row.ratio is None:
        return False
    if row.verdict is Verdict.INCONCLUSIVE:
        return True
    if row.verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT):
        return theta is not None and below_threshold_possible(row, theta)
    if row.verdict not in SETTLED_IF_BOUNDED or row.threshold is None:
        return False
    worse = math.log(row.ratio) if row.direction is Direction.LOWER else -math.log(row.ratio)
    near = row.verdict is not Verdict.FASTER and worse >= 0.5 * math.log1p(row.threshold)
    return near or (theta is not None and unsettled(row, theta))


def below_threshold_possible(row: MetricComparison, theta: float) -> bool:
    """Whether a `regression`/`improvement` row's interval still reaches inside +-theta on its own side: the
    change is established, but whether it is past the practical threshold is not."""
    low, high = row.ratio_low, row.ratio_high
    if low is None or high is None:
        return True
    worse_low = low if row.direction is Direction.LOWER else 1.0 / high  # the smallest worsening allowed
    better_low = 1.0 / high if row.direction is Direction.LOWER else low  # the smallest improvement allowed
    if row.verdict is Verdict.REGRESSION:
        return worse_low < 1.0 + theta
    return better_low < 1.0 + theta


def _theta(decision: DecisionSettings, row: MetricComparison) -> float:
    return practical_threshold(decision, row.case_id, metric_def(row.metric))


HOST_CLOCK = (*LATENCY_FAMILY, HOST_OVERHEAD)  # what follows the host in a CUDA case


def _device_clock_cases(comparison: Comparison) -> set[str]:
    """The cases with a `device.time` estimate: settled on that clock alone."""
    return {r.case_id for r in comparison.rows if r.metric == DEVICE_TIME and r.ratio is not None}


def _undecided_host_row(row: MetricComparison, with_device: set[str]) -> bool:
    """Whether `row` is a host-side row of a case settled on its device clock: an A/B does not decide it."""
    return row.case_id in with_device and row.metric in HOST_CLOCK


def _unsettled_rows(comparison: Comparison, decision: DecisionSettings) -> list[MetricComparison]:
    """The rows that ask for more pairs, counting only each case's steady clock.

    The stopping rule: an A/B stops when every case is settled on its steady clock, or when the looks or the
    budget are spent. A CUDA case with a device clock is settled on `device.time`, when its interval lies wholly
    on one side of each threshold (`ab/looks.device_settled`); its host-side rows (`latency.*`, `host.overhead`)
    follow the host, whose speed differs between processes (2.2x seen for one ResNet-50), so more pairs rarely
    settle them; they are decided on the pairs the device clock needed, and a row still unsettled then is
    `inconclusive` (exit 0, as any inconclusive row). Other cases are settled on all their timed rows
    (`needs_more`)."""
    with_device = _device_clock_cases(comparison)
    out = []
    for r in comparison.rows:
        if _undecided_host_row(r, with_device):
            continue
        steady = r.case_id in with_device and r.metric == DEVICE_TIME
        theta = _theta(decision, r)
        if (not device_settled(r, theta, decision.slower_min)) if steady else needs_more(r, theta):
            out.append(r)
    return out


def _to_continue(comparison: Comparison, decision: DecisionSettings) -> list[str]:
    """The cases that get more pairs (`_unsettled_rows`)."""
    return sorted({r.case_id for r in _unsettled_rows(comparison, decision)})


def mark_out_of_reach(
    comparison: Comparison, decision: DecisionSettings, pairs: int, planned: int
) -> tuple[Comparison, set[str]]:
    """The comparison with a note on each unsettled `device.time` row that the plan cannot settle
    (`ab/looks.out_of_reach`), and the ids of the cases whose every unsettled row is such a row: they get no
    further pairs."""
    unsettled = _unsettled_rows(comparison, decision)
    notes: dict[tuple[str, str], str] = {}
    for r in unsettled:
        if r.metric == DEVICE_TIME:
            theta, n = _theta(decision, r), min(r.n_baseline or pairs, r.n_candidate or pairs)
            needed = out_of_reach(r, theta, n, planned, decision.slower_min)
            if needed is not None:
                notes[(r.case_id, r.metric)] = reach_note(r, theta, n, needed, decision.slower_min)
    if not notes:
        return comparison, set()
    blocked = {r.case_id for r in unsettled if (r.case_id, r.metric) not in notes}
    rows = tuple(replace(r, note=notes[(r.case_id, r.metric)]) if (r.case_id, r.metric) in notes else r
                 for r in comparison.rows)  # fmt: skip
    return replace(comparison, rows=rows), {case for case, _ in notes} - blocked


def next_look_pairs(comparison: Comparison, decision: DecisionSettings, pairs: int, extra: int) -> int:
    """Pairs the next look adds: where only `device.time` rows are unsettled, the pairs their intervals are
    projected to need to settle (the noise target, `ab/looks.pairs_to_settle`), the most over those rows;
    otherwise `extra`."""
    rows = _unsettled_rows(comparison, decision)
    if not rows or any(r.metric != DEVICE_TIME for r in rows):
        return extra
    return max(pairs_to_settle(r, _theta(decision, r), pairs, extra, decision.slower_min) for r in rows)


def unsettled_warning(comparison: Comparison, decision: DecisionSettings) -> str | None:
    """After the last look: a warning naming the cases that are `unchanged`/`slower`/`faster` on a timed metric
    while their interval still allows a change past the practical threshold (too noisy for the pairs the budget
    allowed). The host rows of a case with a device clock are not counted: an A/B does not decide them
    (`_unsettled_rows`), and the summary says so."""
    with_device = _device_clock_cases(comparison)
    cases = sorted(
        {
            r.case_id
            for r in comparison.rows
            if r.verdict in SETTLED_IF_BOUNDED
            and metric_def(r.metric).timed
            and not _undecided_host_row(r, with_device)
            and unsettled(r, _theta(decision, r))
        }
    )
    if not cases:
        return None
    shown = ", ".join(cases[:5]) + (f" and {len(cases) - 5} more" if len(cases) > 5 else "")
    return (
        f"{len(cases)} unchanged/slower/faster case(s) not settled at the practical threshold (their intervals "
        f"still allow a larger change): {shown}; more pairs settle them (--looks, --extra, --budget)"
    )


def _phases(
    start: float, listed: float, measuring: float, analysis: float, pairs: dict[str, float], now: float
) -> dict[str, float]:
    phases = {"listing": listed - start, "fingerprint": measuring - listed, **pairs, "analysis": analysis}
    return {**{k: round(v, 3) for k, v in phases.items()}, "other": round(now - start - sum(phases.values()), 3)}


def _fingerprint(side: Side) -> dict[str, Any] | None:
    return side.environment.fingerprint if side.environment is not None else None


def _with_cases(run: RunResult, extra: list[CaseResult]) -> RunResult:
    return replace(run, cases=(*run.cases, *extra)) if extra else run


def _with_git(run: RunResult, side: Side) -> RunResult:
    git = GitInfo(commit=side.commit, branch=None, dirty=False) if side.commit else run.git
    return replace(run, git=git)


def _nothing_listed(sources: tuple[list[str], list[str]], sides: tuple[Side, Side], listed: int) -> NoCasesError:
    """Why neither side has a case: the filters (-k, --shard) left none, or the sources define none (it said
    only "no cases to compare on either revision", for a folder of plain pytest tests given to --pytest)."""
    if listed:
        return NoCasesError(f"no cases to compare on either revision: -k or --shard left none of the {listed:,} found.")
    shown = sorted({str(relative_source(src, side)) for side, mine in zip(sides, sources, strict=True) for src in mine})
    pytest = any(src.startswith(PYTEST_PREFIX) for src in (*sources[0], *sources[1]))
    named = ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")
    return NoCasesError(
        "no cases to compare on either revision: no perfci workload"
        + (" and no pytest test that uses the `benchmark` or `perf` fixture" if pytest else "")
        + f" in {named or 'the paths given'}.",
        hint="`perfci list PATH` lists a path's workload cases"
        + ("; `pytest --collect-only -q PATH` its tests" if pytest else ""),
    )


def run_ab(
    base: Side,
    head: Side,
    sources: tuple[list[str], list[str]],
    settings: ABSettings,
    out_dir: Path,
    select: Callable[[list[str]], set[str]] | None = None,
    progress: ProgressFn | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> ABOutcome:
    """Run the whole A/B (see the module docstring). `sources` are each side's workload sources."""
    start = clock()
    if settings.build_command:
        for side in (base, head):
            build(side, settings.build_command, out_dir / "logs" / f"build-{side.name}.log")
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="perfci-list") as pool:  # both sides at once
        listing = [
            pool.submit(list_cases, side, src, side.python) for side, src in ((base, sources[0]), (head, sources[1]))
        ]
        listing_a, listing_b = (f.result() for f in listing)
    check_listings(listing_a, listing_b, (base, head))
    listed_a = adopt_uncollected(listing_a.specs, base, listing_b.specs, head)
    listed_b = adopt_uncollected(listing_b.specs, head, listing_a.specs, base)
    chosen = None if select is None else select([s.id for s in (*listed_a, *listed_b)])  # one split of both sides
    specs_a = [s for s in listed_a if chosen is None or s.id in chosen]
    specs_b = [s for s in listed_b if chosen is None or s.id in chosen]
    unlisted_a = unlisted_cases(base, listing_a.failed, head, specs_b)
    unlisted_b = unlisted_cases(head, listing_b.failed, base, specs_a)
    listed = clock()
    if not specs_a and not specs_b:
        raise _nothing_listed(sources, (base, head), listed=len({s.id for s in (*listed_a, *listed_b)}))
    for side, mine, theirs, unlisted in ((base, specs_a, specs_b, unlisted_a), (head, specs_b, specs_a, unlisted_b)):
        if not mine and not unlisted:  # said now, not after the other side's pairs were measured for nothing
            pytest_only = all(s.suite == PYTEST_SUITE for s in theirs)
            raise NoCasesError(
                f"nothing to compare: {side.label} has none of the {len(theirs):,} case(s) the other revision has "
                f"(e.g. {theirs[0].id!r}); the paths given may not exist at that revision"
                + (", or pytest skips their files there at collection" if pytest_only else "")
                + ".",
                hint="`pytest --collect-only -rs PATH` at that revision shows why" if pytest_only else None,
            )
    run_settings = replace(settings.run, seed=settings.seed)
    identity_a, identity_b = side_identity(base, specs_a), side_identity(head, specs_b)
    runner_a = Runner(run_settings, out_dir / "base", progress, base.env, base.python, _fingerprint(base),
                      extra_settings={SIDE_KEY: identity_a}, git_root=base.root)  # fmt: skip
    runner_b = Runner(run_settings, out_dir / "head", progress, head.env, head.python, _fingerprint(head),
                      extra_settings={SIDE_KEY: identity_b}, git_root=head.root)  # fmt: skip
    first = first_look(settings.pairs, specs_a + specs_b)
    planned = first + settings.extra * (settings.looks - 1)
    kept = kept_pairs(out_dir, specs_a, specs_b, (identity_a, identity_b)) if settings.resume else None
    if kept is None:
        runner_a.start(specs_a, planned)
        runner_b.start(specs_b, planned)
    else:
        runner_a.resume(specs_a, kept[0])
        runner_b.resume(specs_b, kept[1])
    paired = PairedRunner(
        runner_a,
        runner_b,
        random.Random(f"ab:{settings.seed}"),
        lockstep=settings.lockstep,
        clock=clock,
        at_once=settings.pairs_at_once,
        extra=settings.extra,
        progress=progress,
    )
    resumed = paired.next_index = kept[2] if kept is not None else 0
    decision = replace(settings.decision, looks=settings.looks)
    only: list[str] | None = None
    looks = 0
    extra = settings.extra  # pairs of the next look (`next_look_pairs`)
    sizes: list[int] = []  # pairs each look added
    comparison: Comparison | None = None
    measure_start = clock()
    analysis = 0.0
    try:
        while True:
            n = max(0, first - resumed) if looks == 0 else extra
            ran = paired.pairs(n, only, last_look=looks + 1 >= settings.looks, deadline=start + settings.budget_s)
            sizes.append(ran)
            looks += 1
            t0 = clock()
            run_a, run_b = _with_git(runner_a.finish(), base), _with_git(runner_b.finish(), head)
            run_a, run_b = _with_cases(run_a, unlisted_a), _with_cases(run_b, unlisted_b)
            comparison = compare_runs(run_a, run_b, decision, (base.label, head.label), paired=True)
            comparison, moded = cap_process_modes(comparison, run_a, run_b)  # two speeds by process (ab/bimodal.py)
            comparison, unreachable = mark_out_of_reach(comparison, decision, paired.next_index, planned)
            only = [c for c in _to_continue(comparison, decision) if c not in moded and c not in unreachable]
            extra = next_look_pairs(comparison, decision, paired.next_index, settings.extra)
            analysis += clock() - t0
            if progress is not None:
                progress(LookDone(looks, len(specs_b) - len(only), len(specs_b)))
            if ran < n:  # the budget ran out within the look
                cut = f"time budget reached: {ran} of the look's {n} pairs ran, no further look"
                comparison = replace(comparison, warnings=(*comparison.warnings, cut))
                break
            if not only or looks >= settings.looks:
                break
            per_pair = (clock() - measure_start) / max(1, paired.next_index)
            share = len(only) / max(1, len(specs_b))
            if clock() - start + per_pair * extra * max(share, 0.25) > settings.budget_s:
                comparison = replace(
                    comparison, warnings=(*comparison.warnings, "time budget reached: no further look")
                )
                break
    finally:
        paired.discard_spares()  # a pair started ahead that no look needed
    assert comparison is not None
    for runner, run, extra_cases in ((runner_a, run_a, unlisted_a), (runner_b, run_b, unlisted_b)):
        if extra_cases:  # the side's results file holds its cases that could not be listed too
            dump_results(run, runner.out_dir / "results.json")
    note = unsettled_warning(comparison, decision)
    if note is not None:
        comparison = replace(comparison, warnings=(*comparison.warnings, note))
    meta = {
        "pairs_initial": first,
        "pairs_extra": settings.extra,
        "look_pairs": sizes,  # pairs each look added (a look on device rows only adds what they need: ab/looks.py)
        "looks_planned": settings.looks,
        "looks_run": looks,
        "pairs_run": paired.next_index,
        "pairs_resumed": resumed,  # pairs kept from an interrupted A/B (`--resume`)
        "pair_order": "".join(o[0] for o in paired.order),
        "pair_blocks": paired.blocks,  # pairs each lockstep block started and set up together
        # worker processes started while the previous pair finished (engine/runner.py `prestart`) and used
        "workers_started_ahead": runner_a.started_ahead + runner_b.started_ahead,
        "budget_s": settings.budget_s,
        "build_command": settings.build_command,
        "seed": settings.seed,
        # where the wall time went, seconds (docs/measurement.md, "Where an A/B's time goes"): `listing` includes
        # the build command if any; `other` is the pairs' own bookkeeping
        "phases_s": _phases(start, listed, measure_start, analysis, paired.phases, clock()),
    }
    if base.environment is not None and head.environment is not None:
        changes = environment_changes(base.environment, head.environment)
        meta["environments"] = {**describe(base.environment, head.environment), "changes": [list(c) for c in changes]}
        comparison = replace(comparison, warnings=(changes_line(changes), *comparison.warnings))
    comparison = replace(comparison, settings={**comparison.settings, "ab": meta})
    elapsed = clock() - start
    return ABOutcome(comparison, run_a, run_b, paired.next_index, looks, elapsed)
