"""A busy machine is not blamed on the code: a timed row that says `regression` or `slower` becomes `inconclusive` when
the candidate was measured under CPU contention that the baseline was not.

The measure is each round's `cpu_wait` (profilers/contention.py): the share of its runnable time the process waited
for a CPU. A side's figure is its most contended round, because one busy round is enough to move a per-round
statistic. The candidate is called contended when its figure exceeds the baseline's by `CONTENTION_MARGIN` or more
and is at least CONTENTION_RATIO times it (a baseline without the figure, written by an older perfci or on a
platform without it, counts as 0): two sides measured under the same load read 0.3-0.5 each, one round more or less,
and are compared as usual. A quiet 2-core machine reads below 0.02; two busy processes beside a single-threaded
measurement read 0.3-0.5 per round. Only rows that would blame the candidate change: an improvement measured on a
busy machine stands, and a memory row is not a timing. Nor does a change larger than the wait can explain: a
round that waited a share w of its runnable time ran at least 1 - w of the time, and its median sample, if the
waits fell on half of the samples, at 1 - 2w; a row whose whole interval lies beyond (1 - b) / (1 - 2c) for the
baseline's wait b and the candidate's c keeps its verdict, with the note (`explainable_ratio`; seen on CI's
2-core machine: a test made three times slower called `inconclusive` because its rounds waited 10%).

Both sides measured on a busy machine (`busy_machine`): a separate job on a busy machine runs at another speed, so
an unpaired row that would blame the candidate is decided again with the job-to-job noise at least BUSY_JOB_NOISE
(compare/decide.py). Paired rows (an A/B's lockstep pairs) see both revisions at the same moment and keep theirs.

An unsteady machine (`unsteady_machine`): a virtual machine's speed can move by half without any wait or steal to
show it. Each round keeps the seconds of a fixed pure-Python loop timed just before and after it
(profilers/contention.py, `speed_probe_s`); where those readings, over both sides' rounds, spread by more than
UNSTEADY_RANGE (log of the slowest over the fastest), the machine ran at other speeds while the two jobs ran, and
every unpaired host-timed row is decided again with the job-to-job noise at least half that spread (and at least
BUSY_JOB_NOISE), in both directions: an improvement in an A/A is as wrong as a regression. Seen on the 2-core CI
VM: the probe at 0.7 and 1.3 ms in phases, two sessions of unchanged tests 1.6-1.7x apart, three false
`regression` rows in eight comparisons. A quiet machine's probes stay within a few percent.
"""

from __future__ import annotations

import math
from dataclasses import replace

from perfci.format.model import CaseResult, MetricComparison, Verdict

CONTENTION_MARGIN = 0.05
BUSY_WAIT = 0.2  # a round that waited this share of its runnable time for a CPU was measured on a busy machine
CONTENTION_RATIO = 2.0
CPU_WAIT = "cpu_wait"  # the round telemetry key (profilers/contention.py)
SPEED_PROBE = "speed_probe_s"  # the round telemetry key of the speed probe's two readings
UNSTEADY_RANGE = math.log(1.3)  # probe readings further apart than this: the machine's speed moved
BLAMING = (Verdict.REGRESSION, Verdict.SLOWER)  # the verdicts that blame the candidate


def busiest_wait(case: CaseResult) -> float | None:
    """The largest `cpu_wait` of the case's rounds; None when no round has one."""
    waits = [w for r in case.rounds if isinstance(w := r.telemetry.get(CPU_WAIT), int | float)]
    return float(max(waits)) if waits else None


def busy_machine(base: CaseResult, cand: CaseResult) -> float | None:
    """The larger of the two sides' busiest waits when it reaches BUSY_WAIT (the case was measured on a busy
    machine on at least one side), else None. Equal contention on both sides is no comparison of like with like
    between separate jobs: how fast a busy machine runs a job changes from job to job (compare/policy.py,
    BUSY_JOB_NOISE)."""
    waits = [w for w in (busiest_wait(base), busiest_wait(cand)) if w is not None]
    return max(waits) if waits and max(waits) >= BUSY_WAIT else None


def probe_readings(case: CaseResult) -> list[float]:
    """The speed probe's readings of the case's rounds (seconds; none from a perfci that did not take them)."""
    got: list[float] = []
    for r in case.rounds:
        values = r.telemetry.get(SPEED_PROBE)
        if isinstance(values, list):
            got += [float(v) for v in values if isinstance(v, int | float) and v > 0]
    return got


def unsteady_machine(base: CaseResult, cand: CaseResult) -> float | None:
    """The spread of the speed probe over both sides' rounds (log of the slowest reading over the fastest) when
    it exceeds UNSTEADY_RANGE, else None (steady, or a side without readings)."""
    b, c = probe_readings(base), probe_readings(cand)
    if not b or not c:
        return None
    spread = math.log(max(b + c) / min(b + c))
    return spread if spread > UNSTEADY_RANGE else None


def unsteady_note(spread: float, noise: float) -> str:
    return (
        f"the machine's speed moved while these jobs ran (a fixed loop timed around each round took up to "
        f"{math.exp(spread) - 1:.0%} longer at some times than at others); job-to-job noise taken as at least "
        f"{noise:.0%}; `perfci ab` measures both revisions at the same moments"
    )


def busy_note(base: CaseResult, cand: CaseResult, noise: float) -> str:
    """Which side was measured on a busy CPU, and what that does to the comparison; where only the baseline was
    busy, that measuring again will not settle it (the note named no side: a re-run of a quiet candidate was
    the obvious, useless, remedy)."""
    busy = [(side, w) for side, w in (("baseline", busiest_wait(base)), ("candidate", busiest_wait(cand)))
            if w is not None and w >= BUSY_WAIT]  # fmt: skip
    where = " and ".join(f"the {side}'s (a round waited {w:.0%} of its runnable time for a CPU)" for side, w in busy)
    remedy = (
        "; the candidate was quiet: a new baseline from a quiet machine settles it, or `perfci ab`"
        if [side for side, _ in busy] == ["baseline"]
        else ""
    )
    return f"measured on a busy CPU: {where}; job-to-job noise taken as at least {noise:.0%}{remedy}"


def contention_note(base: CaseResult, cand: CaseResult, margin: float = CONTENTION_MARGIN) -> str:
    """Why the candidate's timings cannot be blamed on the code ("" when they can)."""
    c = busiest_wait(cand)
    if c is None:
        return ""
    b = busiest_wait(base)
    if c - (b or 0.0) < margin or c < CONTENTION_RATIO * (b or 0.0):
        return ""
    base_words = f"the baseline's {b:.0%}" if b is not None else "the baseline has no such figure"
    return (
        f"measured on a busy CPU: the candidate waited for a CPU {c:.0%} of its runnable time ({base_words}); "
        "measure again on a quiet machine"
    )


def explainable_ratio(base: CaseResult, cand: CaseResult) -> float:
    """The largest slowdown (candidate / baseline time) the two sides' CPU waits could explain (module doc)."""
    c, b = busiest_wait(cand) or 0.0, busiest_wait(base) or 0.0
    return math.inf if 2.0 * c >= 1.0 else (1.0 - b) / (1.0 - 2.0 * c)


def unblamed(row: MetricComparison, note: str, explainable: float = math.inf) -> MetricComparison:
    """`row` as `inconclusive` with `note` when it blames the candidate and `note` says why it cannot, unless its
    whole interval lies beyond the slowdown (a ratio of times) the contention could explain."""
    if not note or row.verdict not in BLAMING or row.method not in ("paired", "unpaired"):
        return row
    if row.ratio_low is not None and row.ratio_high is not None:
        higher = row.direction is not None and row.direction.value == "higher"
        beyond = row.ratio_high < 1.0 / explainable if higher else row.ratio_low > explainable
        if beyond:
            return replace(
                row,
                note="; ".join(n for n in (row.note, f"{note}, but the change is larger than the wait explains") if n),
            )
    why = f"{note} (estimate {row.ratio - 1:+.1%})" if row.ratio is not None else note
    return replace(row, verdict=Verdict.INCONCLUSIVE, note=why)
