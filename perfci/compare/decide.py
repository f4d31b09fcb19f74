"""Decide, per case and metric, whether the candidate regressed against the baseline.

The round (worker process) is the unit of replication: every statistic works on one value per round.

- Timed metrics (latency...): `perfci.stats.decision.decide` on an estimate of log(candidate / baseline):
  * paired (same-machine A/B, `paired=True`): rounds with the same index on both sides form a pair, ran
    back-to-back in random order; d_i = log(B_i / A_i), t bound on the (trimmed) mean of d. For the median
    latency of a lockstep pair (both sides sampled step by step, `step_pairs`), d_i is the median of the
    step ratios log(B_k / A_k) (stats/logratio.step_log_ratio): it does not see the machine's speed moving
    between the steps. `device.time` is the exception (`INTERLEAVED`): Welch on the two sides' rounds,
    without a job-to-job term;
  * unpaired (two separate runs): Welch on log per-round values plus the cross-job term `job_noise`, because
    rounds of one job share that job's machine state; with the default job noise a stored-baseline comparison
    flags only large changes and calls smaller ones `inconclusive` (then `perfci run --confirm` or `perfci ab`).
- Memory and other near-deterministic metrics: `tolerance_verdict` on per-round values; accuracy metrics (an
  absolute threshold, metrics/definitions.py) with the threshold as the absolute slack and no relative part.
Details, defaults and why: docs/compare.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from perfci.compare.case_ids import moved_test_ids
from perfci.compare.contended import (
    BLAMING,
    busy_machine,
    busy_note,
    contention_note,
    explainable_ratio,
    unblamed,
    unsteady_machine,
    unsteady_note,
)
from perfci.compare.coverage import (
    BASELINE_FAILED,
    BASELINE_NO_DATA,
    BASELINE_SKIPPED,
    CANDIDATE_NO_DATA,
    Scope,
    recorded_scope,
    require_common,
    require_compared,
    settle_missing,
)
from perfci.compare.policy import BUSY_JOB_NOISE, DecisionSettings, job_noise, practical_threshold
from perfci.errors import UsageError
from perfci.format.comparison import run_side
from perfci.format.model import CaseResult, CaseStatus, Comparison, MetricComparison, Round, RunResult, Verdict
from perfci.metrics.definition import GREW
from perfci.metrics.registry import (
    DEVICE_TIME,
    HOST_OVERHEAD,
    LATENCY,
    VS_REFERENCE,
    MetricDef,
    implausible,
    launch_bound,
    round_values,
    tolerance_of,
)
from perfci.profilers.device_time import clock_aware
from perfci.profilers.fingerprint_changes import fingerprint_differences
from perfci.stats.decision import decide, min_detectable, tolerance_interval, tolerance_verdict
from perfci.stats.logratio import narrower, paired_differences, ratio_of, step_log_ratio, unpaired_log_ratio
from perfci.stats.summary import geometric_mean, median

__all__ = ["LATENCY", "DecisionSettings", "Scope", "check_comparable", "compare_case", "compare_runs", "new_case_row"]


def _value(case: CaseResult, metric: str = LATENCY) -> float | None:
    m = case.metric(metric)
    return m.value if m else None


def _nan_none(x: float) -> float | None:
    return None if math.isnan(x) else x


LOCKSTEP = "lockstep"  # Round.stop_reason of a lockstep pair's rounds (engine/worker.py)
MIN_STEPS = 3  # a lockstep pair's median latency from step ratios needs this many steps a side


def step_pairs(base: CaseResult, cand: CaseResult) -> dict[int, float]:
    """Round index -> log(B / A) of the median latency from the step ratios (`step_log_ratio`), for each pair
    whose two rounds were sampled in lockstep with as many samples a side (at least MIN_STEPS): the k-th
    samples of the two sides were taken one right after the other. Other pairs are left out (their rounds'
    medians are compared instead)."""
    cand_rounds = {r.index: r for r in cand.rounds}
    out: dict[int, float] = {}
    for a in base.rounds:
        b = cand_rounds.get(a.index)
        if b is not None and _lockstep(a) and _lockstep(b) and len(a.samples) == len(b.samples) >= MIN_STEPS:
            out[a.index] = step_log_ratio(a.per_call, b.per_call)
    return out


def _lockstep(r: Round) -> bool:
    return r.stop_reason == LOCKSTEP and min(r.samples, default=0.0) > 0


def _timed_row(
    case_id: str, mdef: MetricDef, base: dict[int, float], cand: dict[int, float], theta: float, alpha: float,
    settings: DecisionSettings, paired: bool, steps: dict[int, float] | None = None, in_process: bool = False,
    noise_floor: float = 0.0, interleaved: bool = False,
) -> MetricComparison:  # fmt: skip
    common = sorted(set(base) & set(cand)) if paired else []
    # per pair: its step ratio where it has one (lockstep median latency), else the ratio of its rounds' values
    d = [steps[i] if steps and i in steps else math.log(cand[i]) - math.log(base[i]) for i in common]
    together = paired_differences(d, settings.trim) if common else None
    if interleaved and together is not None:  # pair by pair only where that gives the narrower interval
        apart = unpaired_log_ratio(list(base.values()), list(cand.values()), 0.0)
        if narrower(apart, together, 1.0 - 2.0 * alpha) is apart:
            common, together = [], None
    if together is not None:  # paired (without a round index in common, e.g. an edited copy renumbered: unpaired)
        est = together
        kept = kept_pairs(d, settings.trim)
        # geometric means over the pairs the estimate kept: the baseline's values, and the baseline times the
        # estimated change, so that candidate / baseline is exactly the change shown (step ratios are not a ratio
        # of the rounds' values; medians of rounds, or means over pairs the estimate trimmed, could even move the
        # other way: seen 1.65 ms -> 1.50 ms shown as +9.5%; 191 us -> 183 us, +0.1%)
        shown_base = geometric_mean([base[common[i]] for i in kept])
        shown_cand = shown_base * ratio_of(math.fsum(d[i] for i in kept) / len(kept))
    else:
        # interleaved: both sides' rounds alternated on one machine in one period, so no job-to-job shift
        noise = 0.0 if interleaved else max(job_noise(settings, case_id, mdef.name, in_process), noise_floor)
        est = unpaired_log_ratio(list(base.values()), list(cand.values()), noise)
        shown_base, shown_cand = geometric_mean(list(base.values())), geometric_mean(list(cand.values()))
    higher = mdef.direction.value == "higher"
    decision = decide(est, theta, alpha, higher, settings.noise_factor, settings.catch, settings.slower_min)
    low, high = est.interval(1.0 - 2.0 * alpha)
    note = "" if not math.isnan(est.se) else "too few rounds to estimate the noise"
    worse = -math.log(est.ratio) if higher else math.log(est.ratio)
    if decision.verdict in ("regression", "improvement") and abs(worse) < math.log1p(decision.threshold):
        note = (
            f"estimate below the {decision.threshold:.1%} threshold but above the cut-off {decision.cutoff:.2%} "
            "(catch rule)"
        )
    return MetricComparison(
        case_id=case_id,
        metric=mdef.name,
        verdict=Verdict(decision.verdict),
        unit=mdef.unit,
        baseline=shown_base,
        candidate=shown_cand,
        ratio=est.ratio,
        ratio_low=_nan_none(low),
        ratio_high=_nan_none(high),
        threshold=decision.threshold,
        note=note,
        direction=mdef.direction,
        method="paired" if common else "unpaired",
        confidence=1.0 - alpha,
        bound=_nan_none(decision.bound),
        noise=_nan_none(est.se),
        n_baseline=est.n_baseline,
        n_candidate=est.n_candidate,
        mdc=_nan_none(min_detectable(est, alpha)),
    )


def kept_pairs(d: list[float], trim: float) -> list[int]:
    """The pairs a trimmed paired estimate keeps, by position in `d` (the per-pair log ratios): sorted by d,
    floor(trim * n) cut from each end (stats/logratio.trimmed_mean_se)."""
    n = len(d)
    g = math.floor(trim * n)
    return sorted(range(n), key=d.__getitem__)[g : n - g]


_SIZE_WORDS = {Verdict.SLOWER: Verdict.GREW, Verdict.FASTER: Verdict.SHRANK}


def _tolerance_row(
    case_id: str, mdef: MetricDef, base: dict[int, float], cand: dict[int, float], theta: float, slack: float
) -> MetricComparison:
    b, c = list(base.values()), list(cand.values())
    verdict = Verdict(tolerance_verdict(b, c, theta, slack, mdef.direction.value == "higher"))
    if mdef.moves == GREW:  # a size does not get slower: it grows (the definition's words)
        verdict = _SIZE_WORDS.get(verdict, verdict)
    mb, mc = median(b), median(c)
    low, high = tolerance_interval(b, c, by_difference=mdef.moves == GREW)
    return MetricComparison(
        case_id=case_id,
        metric=mdef.name,
        verdict=verdict,
        unit=mdef.unit,
        baseline=mb,
        candidate=mc,
        ratio=_ratio(mc, mb),
        ratio_low=low,
        ratio_high=high,
        threshold=theta,
        direction=mdef.direction,
        method="tolerance",
        n_baseline=len(b),
        n_candidate=len(c),
    )


def _ratio(a: float, b: float) -> float | None:
    """a / b; None where b is 0 (an accuracy error of 0 on the baseline's side)."""
    return a / b if b else None


def compare_case(
    base: CaseResult, cand: CaseResult, settings: DecisionSettings, paired: bool = False, n_cases: int = 1
) -> list[MetricComparison]:
    """All metric rows for one case present on both sides."""
    if cand.status is CaseStatus.ERROR:  # the note names the side that failed (an A/B's rows hold two sides)
        message = cand.errors[0].message if cand.errors else "error"
        side = "both sides failed" if base.status is CaseStatus.ERROR else "candidate failed"
        return [MetricComparison(cand.id, LATENCY, Verdict.ERROR, "s", _value(base), None, note=f"{side}: {message}")]
    if cand.status is CaseStatus.SKIPPED:
        reason = cand.errors[0].message if cand.errors else "skipped"
        return [MetricComparison(cand.id, LATENCY, Verdict.MISSING, "s", _value(base), None, note=f"skipped: {reason}")]
    if base.status is not CaseStatus.OK or not base.rounds:
        # a case that failed or was skipped in the baseline and is measured now: named, not failed
        word = BASELINE_SKIPPED if base.status is CaseStatus.SKIPPED else BASELINE_FAILED
        note = f"{word}: {base.errors[0].message}" if base.errors else BASELINE_NO_DATA
        return [MetricComparison(cand.id, LATENCY, Verdict.NEW, "s", None, _value(cand), note=note)]
    if not cand.rounds:  # `ok` with nothing measured: no metric would make a row, and the case would pass unseen
        return [MetricComparison(cand.id, LATENCY, Verdict.MISSING, "s", _value(base), None, note=CANDIDATE_NO_DATA)]
    alpha = settings.alpha(n_cases)
    busy = contention_note(base, cand)
    busy_wait = busy_machine(base, cand)
    unsteady = unsteady_machine(base, cand)
    unsteady_swing = unsteady / 2.0 if unsteady is not None else 0.0  # the job noise an unsteady machine implies
    in_process = _in_process(base) and _in_process(cand)
    rows: list[MetricComparison] = []
    sources = (device_sources(base), device_sources(cand))
    host_set = launch_bound(base) or launch_bound(cand)  # its latency follows the host: the host's threshold
    for name in settings.metrics:
        mdef = settings.registry.comparable(name)
        if name in DEVICE_CLOCK and sources[0] != sources[1]:
            if sources[0] and sources[1]:
                rows.append(_other_sources(cand.id, mdef, base, cand))
            continue
        bv = round_values(base, mdef)
        cv = round_values(cand, mdef) if bv else {}  # a metric the baseline lacks: the candidate's is not read
        if not bv or not cv or implausible(base, name) or implausible(cand, name):
            continue  # implausible values are not compared (compare_runs warns)
        tolerance = (tolerance_of(cand, name) or tolerance_of(base, name)) if mdef.threshold.absolute else None
        theta = practical_threshold(settings, cand.id, mdef, host_set, tolerance)
        clocked = clock_aware(base.rounds, cand.rounds, bv, cv) if name == DEVICE_TIME else None
        if clocked is not None:  # in cycles where the sides' SM clocks differ; throttled slices left out, said so
            bv, cv = clocked.base, clocked.cand
        if mdef.timed:
            steps = step_pairs(base, cand) if paired and name == LATENCY else None
            interleaved = paired and name in INTERLEAVED
            row = _timed_row(cand.id, mdef, bv, cv, theta, alpha, settings, paired, steps, in_process,
                             interleaved=interleaved)  # fmt: skip
            if busy and not mdef.threshold.host_set:  # the GPU's own clock does not wait for the host's CPUs
                row = replace(row, note="; ".join(n for n in (row.note, f"{busy}; GPU kernel time does not "
                                                                        "depend on it") if n))  # fmt: skip
            elif busy:  # the candidate was busier than the baseline: not blamed at all
                row = unblamed(row, busy, explainable_ratio(base, cand))
            elif busy_wait is not None and row.method == "unpaired" and not interleaved and row.verdict in BLAMING:
                # a machine both busy and unsteady: the wider of the two rules' floors
                swing = unsteady_swing if mdef.threshold.host_set else 0.0
                floor = max(BUSY_JOB_NOISE, swing)
                row = _timed_row(cand.id, mdef, bv, cv, theta, alpha, settings, paired, steps, in_process,
                                 noise_floor=floor)  # fmt: skip
                wider = unsteady_note(unsteady, floor) if unsteady is not None and swing > BUSY_JOB_NOISE else ""
                notes = (row.note, busy_note(base, cand, floor), wider)
                row = replace(row, note="; ".join(n for n in notes if n))
            elif unsteady is not None and row.method == "unpaired" and not interleaved and mdef.threshold.host_set:
                floor = max(BUSY_JOB_NOISE, unsteady_swing)  # both directions: a false improvement is wrong too
                row = _timed_row(cand.id, mdef, bv, cv, theta, alpha, settings, paired, steps, in_process,
                                 noise_floor=floor)  # fmt: skip
                row = replace(row, note="; ".join(n for n in (row.note, unsteady_note(unsteady, floor)) if n))
            if clocked is not None and clocked.note:
                row = replace(row, note="; ".join(n for n in (row.note, clocked.note) if n))
            rows.append(row)
        elif mdef.threshold.absolute:  # theta is in the metric's unit: the slack, with no relative part
            rows.append(replace(_tolerance_row(cand.id, mdef, bv, cv, 0.0, theta), threshold=theta))
        else:
            slack = settings.memory_slack_bytes if mdef.unit == "B" else 0.0
            rows.append(_tolerance_row(cand.id, mdef, bv, cv, theta, slack))
    return rows


DEVICE_CLOCK = (DEVICE_TIME, HOST_OVERHEAD)
# In a paired A/B, these metrics compare the two sides' rounds as two interleaved samples (Welch, without a
# job-to-job term) unless pair by pair gives the narrower interval. Pairs cancel the host's drift; the GPU's own
# kernel time mostly does not drift with the host (within-pair correlation 0.04 for a ResNet-50, 0.47 for a
# BERT-base, docs/compare.md), and at an A/B's first look pairing halves the degrees of freedom (3 against 6 at 4
# pairs). But some kernels move with a state both sides of a pair share: a ConvNeXt-Tiny's depthwise convolution
# read 404-439 us per call from pair to pair on the H200, the two sides of a pair within 1-2% of each other
# (docs/gpu.md); there the pairs' differences give the narrower interval, and it is the one used
# (stats/logratio.narrower: a choice made on the spreads alone keeps the interval's coverage).
INTERLEAVED = (DEVICE_TIME,)


def device_sources(case: CaseResult) -> frozenset[str]:
    """Where the case's device clock came from (profilers/device_time.py), over its rounds."""
    return frozenset(r.device.source for r in case.rounds if r.device is not None)


def _other_sources(case_id: str, mdef: MetricDef, base: CaseResult, cand: CaseResult) -> MetricComparison:
    """Device clocks of different sources are never compared with each other."""
    b, c = ", ".join(sorted(device_sources(base))), ", ".join(sorted(device_sources(cand)))
    return MetricComparison(
        case_id,
        mdef.name,
        Verdict.INCONCLUSIVE,
        mdef.unit,
        note=f"device clocks from different sources ({b} vs {c}) are not compared",
    )


def _in_process(case: CaseResult) -> bool:
    """Whether every round was measured in the pytest plugin's process (pytest_plugin/measure.py)."""
    return bool(case.rounds) and all(r.telemetry.get("in_process") is True for r in case.rounds)


def new_case_row(cand: CaseResult) -> MetricComparison:
    """The row of a candidate case with no baseline: `new` (listed, never failed), or `error` with its message
    when it failed (a new test that raises: its error is the news, not its novelty)."""
    if cand.status is CaseStatus.ERROR:
        message = cand.errors[0].message if cand.errors else "error"
        return MetricComparison(cand.id, LATENCY, Verdict.ERROR, "s", None, None, note=f"new case: {message}")
    return MetricComparison(cand.id, LATENCY, Verdict.NEW, "s", None, _value(cand))


def compare_runs(
    baseline: RunResult,
    candidate: RunResult,
    settings: DecisionSettings,
    labels: tuple[str, str] = ("", ""),
    paired: bool = False,
    scope: Scope | None = None,
) -> Comparison:
    """Every case and metric of the two runs decided. With no case in common: a usage error (coverage.py).
    Baseline cases without a candidate are settled by `scope` (what the candidate left out on purpose, whether
    missing cases are allowed; default: what the candidate's file records) through coverage.settle_missing."""
    # Two files of the same run (same run id and start: e.g. a results file and an edited copy of it) hold the
    # same worker processes round by round: pair them, and no cross-job noise applies.
    same_run = baseline.run_id == candidate.run_id and baseline.started_at == candidate.started_at
    paired = paired or same_run
    moved = moved_test_ids((c.id for c in baseline.cases), (c.id for c in candidate.cases))
    require_common(baseline, candidate, labels, len(moved))
    by_candidate = {cand_id: base_id for base_id, cand_id in moved.items()}
    rows: list[MetricComparison] = []
    pairs = [(baseline.case(by_candidate.get(c.id, c.id)), c) for c in candidate.cases]
    n_cases = sum(1 for base, _ in pairs if base is not None)
    for base, cand in pairs:
        if base is None:
            rows.append(new_case_row(cand))
        else:
            rows += compare_case(base, cand, settings, paired, n_cases)
    cand_ids = {c.id for c in candidate.cases}
    for base in baseline.cases:
        if base.id not in cand_ids and base.id not in moved:
            rows.append(MetricComparison(base.id, LATENCY, Verdict.MISSING, "s", _value(base), None))
    hardware, software = fingerprint_differences(baseline.fingerprint, candidate.fingerprint)
    warnings = tuple(f"hardware differs: {d}" for d in hardware) + tuple(f"software differs: {d}" for d in software)
    warnings += _absent_metrics(settings, rows) + _implausible(settings, baseline, candidate)
    warnings += _settings_differences(baseline.settings, candidate.settings)
    warnings += _single_rounds(pairs)
    warnings += tuple(
        f"the {side} ({run.run_id}) did not finish: its file was written part-way (settings.complete is false), "
        "with the rounds done by then; `perfci run --resume` completes it"
        for side, run in (("baseline", baseline), ("candidate", candidate))
        if run.settings.get("complete") is False
    )
    if same_run:
        warnings += (
            f"both sides are the same run ({baseline.run_id}), compared with itself round by round: a check of the "
            "files, not a measurement of any change",
        )
    if moved:
        warnings += (
            f"{len(moved)} baseline case(s) matched under an earlier id of their pytest test (the file's path was "
            f"relative to pytest's rootdir, e.g. {next(iter(moved))!r}); update the baseline to record the new ids",
        )
    comparison = Comparison(
        labels[0] or baseline.run_id,
        labels[1] or candidate.run_id,
        tuple(rows),
        warnings,
        mode="paired" if paired else "unpaired",
        baseline_run=run_side(baseline),
        candidate_run=run_side(candidate),
        settings=settings.as_dict(),
    )
    recorded = recorded_scope(candidate)
    settled = settle_missing(comparison, recorded.merged(scope) if scope is not None else recorded)
    return require_compared(settled, settings.metrics)


# run settings that change what a call does or how it is timed: a difference is a change of the measurement that
# the comparison would credit to the code (threads 1 -> 2 read as a speed-up of the candidate)
_MEASUREMENT_SETTINGS = (
    ("threads", ("threads",)),
    ("seed", ("seed",)),
    ("cpus", ("cpu_affinity",)),
    ("GPU timing mode", ("timing", "gpu_mode")),
    ("allocator tunables", ("malloc_tunables",)),
)


def _setting(settings: Mapping[str, object], path: tuple[str, ...]) -> object:
    value: object = settings
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _settings_differences(base: Mapping[str, object], cand: Mapping[str, object]) -> tuple[str, ...]:
    """One warning per measurement setting the two runs recorded differently (a file that records none: no word)."""
    said = []
    for name, path in _MEASUREMENT_SETTINGS:
        a, b = _setting(base, path), _setting(cand, path)
        if a is not None and b is not None and a != b:
            said.append(f"settings differ: {name} {a} -> {b}; the comparison credits what that changes to the code")
    return tuple(said)


def _single_rounds(pairs: list[tuple[CaseResult | None, CaseResult]]) -> tuple[str, ...]:
    """One warning for the measured cases with a single round on a side: no noise can be estimated from one round,
    so no change in them can ever be decided (a `benchmark.pedantic(rounds=1)` test 10x slower read inconclusive)."""
    single = [c.id for b, c in pairs if b is not None and c.status is CaseStatus.OK and b.status is CaseStatus.OK
              and min(len(b.rounds), len(c.rounds)) == 1]  # fmt: skip
    if not single:
        return ()
    return (
        f"{len(single)} case(s) have a single round on a side, so no change in them can be decided (e.g. "
        f"{single[0]!r}); measure 2 rounds or more (a pytest-benchmark test: benchmark.pedantic(rounds=2) or more)",
    )


def _absent_metrics(settings: DecisionSettings, rows: list[MetricComparison]) -> tuple[str, ...]:
    """A metric asked for (beyond the defaults) that no case has on both sides would otherwise pass silently."""
    present = {r.metric for r in rows}
    out = []
    for name in settings.metrics:
        if name in settings.registry.compared_by_default() or name in present:
            continue
        why = " (it is measured only by runs made with --speed-reference)" if name == VS_REFERENCE else ""
        out.append(f"no case has {name} in both runs, so it was not compared{why}")
    return tuple(out)


def _implausible(settings: DecisionSettings, baseline: RunResult, candidate: RunResult) -> tuple[str, ...]:
    """One warning per case and metric asked for that was left out because a side's value is implausible."""
    out = []
    for cand in candidate.cases:
        base = baseline.case(cand.id)
        for name in settings.metrics:
            why = implausible(cand, name) or (implausible(base, name) if base is not None else "")
            if why:
                out.append(f"{cand.id}: {name} not compared: {why}")
    return tuple(out)


def check_comparable(baseline: RunResult, candidate: RunResult, allow_mismatch: bool) -> None:
    """The fingerprint rule (perfci.profilers.fingerprint_changes): refuse on a hardware difference unless allowed."""
    hardware, _ = fingerprint_differences(baseline.fingerprint, candidate.fingerprint)
    if hardware and not allow_mismatch:
        raise UsageError(
            f"the two runs come from different hardware ({'; '.join(hardware)}), so their timings are not comparable.",
            hint="compare results of the same runner class, or pass --allow-mismatch to compare anyway",
        )
