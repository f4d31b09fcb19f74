"""Decision tables: the table a team chooses precision, batch and runtime by, one per model (or sweep).

For every sweep of a run (reports/sweeps.py: one workload on one device whose cases differ in a parameter), one
row per case: time per call (the median latency with its interval), time per item and items per second (a
declared batch parameter divides the call), peak memory on the host and on the device, and the accuracy against
the workload's reference (relative L2 error, with its tolerance). The **best configuration** is the row ranked
first among those that measured, stayed within their accuracy tolerance and within `max_memory`: by time per
item (`rank="time"`), or by peak memory (`rank="memory"`: the device's for a GPU case, else the host's). Rows
that differ in a size (a numeric swept parameter other than the batch: `n`, `rows`, `seq_len`) do different work,
so they are not ranked against each other: the best is named per size, and a sweep of sizes alone has none. Notes
that explain a surprise (reduced precision on a CPU without native support, int8 calibrated on random data, a
provider that fell back to the CPU, a compiled variant that recompiled) come from the cases' own notes.

Pure functions of the results: no I/O. The renderers are in reports/decision_lines.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from perfci.format.model import CaseResult, CaseStatus, RunResult, printable
from perfci.metrics.registry import ACCURACY_MAX_ABS, ACCURACY_REL_L2, LATENCY, MEMORY_DEVICE, MEMORY_HOST
from perfci.metrics.rounds import tolerance_of
from perfci.reports.sweeps import Sweep, find_sweeps
from perfci.workloads.surprises import NOTE_MARK

RANKS = ("time", "memory")
ACCURACY_NOTE = "accuracy"  # where a workload's check records its accuracy (workloads/checks.py)
EXPLAIN_NOTE = "explain"  # a workload's notes that explain a surprising figure (a list of sentences)


@dataclass(frozen=True)
class DecisionView:
    """How decision tables rank their rows (`time` per item or peak `memory`) and which memory limit leaves rows
    out (bytes; None: no limit): `--rank` and `--max-memory` of run, compare and report."""

    rank: str = "time"
    max_memory: float | None = None
    bound: tuple[RunResult, list[DecisionTable]] | None = field(default=None, compare=False, repr=False)

    def tables(self, run: RunResult | None) -> list[DecisionTable]:
        if self.bound is not None and self.bound[0] is run:
            return self.bound[1]
        return decision_tables(run, self.rank, self.max_memory)

    def for_run(self, run: RunResult | None) -> DecisionView:
        """This view with `run`'s tables worked out once, for a comparison's report, summary and terminal to share
        (a 5,000-case run's tables took 0.13 s, three times over, in one `perfci compare --out`)."""
        if run is None or (self.bound is not None and self.bound[0] is run):
            return self
        return replace(self, bound=(run, decision_tables(run, self.rank, self.max_memory)))


BY_TIME = DecisionView()  # the default view: by time per item, no memory limit


@dataclass(frozen=True)
class Accuracy:
    """A case's accuracy against its reference: the relative L2 error, the worst absolute difference, and the
    tolerance it was checked against (`limit`: the relative L2 bound, where the tolerance has one)."""

    reference: str
    rel_l2: float | None
    max_abs: float | None
    rule: str
    limit: float | None

    @property
    def within(self) -> bool | None:
        if self.limit is None or self.rel_l2 is None:
            return None
        return self.rel_l2 <= self.limit


@dataclass(frozen=True)
class Choice:
    """One row: a configuration (the parameters other than the batch), its batch, and what it costs."""

    case_id: str
    config: str
    batch: int | None
    per_call: float | None
    host_bytes: float | None
    device_bytes: float | None
    accuracy: Accuracy | None
    failed: str | None  # why the case cannot be chosen (an error, a tolerance not met), None when it can
    # the intervals the figures are known to (latency's 95% interval; memory's range over rounds), for ties
    per_call_range: tuple[float, float] | None = None
    host_range: tuple[float, float] | None = None
    device_range: tuple[float, float] | None = None

    @property
    def per_item(self) -> float | None:
        if self.per_call is None:
            return None
        return self.per_call / (self.batch or 1)

    @property
    def items_per_s(self) -> float | None:
        per_item = self.per_item
        return 1.0 / per_item if per_item else None


@dataclass(frozen=True)
class DecisionTable:
    workload: str
    device: str
    rank: str  # "time" or "memory"
    batch_param: str | None
    rows: tuple[Choice, ...]
    best: tuple[Choice, ...]  # the best row of each size (one at most where nothing swept is a size)
    over_memory: tuple[str, ...]  # configurations left out by max_memory
    notes: tuple[str, ...]
    sizes: tuple[str, ...] = ()  # swept parameters that change the work done (numbers other than the batch)
    size_of: Mapping[str, str] | None = None  # case id -> its sizes as text (`n=384`), where there are sizes
    # case id of a best row -> the eligible rows of its size this run cannot tell from it (their intervals overlap)
    tied: Mapping[str, tuple[Choice, ...]] | None = None

    @property
    def key(self) -> str:
        return f"{self.workload}@{self.device}"

    def memory_of(self, row: Choice) -> float | None:
        """The memory a row is ranked and limited by: the device's for a GPU case, else the host's."""
        if self.device.startswith("cuda") and row.device_bytes is not None:
            return row.device_bytes
        return row.host_bytes

    def span_of(self, row: Choice) -> tuple[float, float] | None:
        """The interval of what a row is ranked by (per item or per call, or memory), as far as this run knows it."""
        if self.rank == "time":
            if row.per_call_range is None:
                return None
            items = row.batch or 1
            return row.per_call_range[0] / items, row.per_call_range[1] / items
        if self.device.startswith("cuda") and row.device_bytes is not None:
            return row.device_range
        return row.host_range

    def ties_of(self, row: Choice) -> tuple[Choice, ...]:
        return (self.tied or {}).get(row.case_id, ())

    def starred(self, row: Choice) -> bool:
        """Whether the row is a best configuration, or tied with one."""
        return any(b is row or row in self.ties_of(b) for b in self.best)


def _notes(case: CaseResult) -> Mapping[str, Any]:
    """The workload's notes of the case's last round that has any (set-up notes repeat in every round)."""
    for r in reversed(case.rounds):
        notes = (r.telemetry or {}).get("notes")
        if isinstance(notes, Mapping):
            return notes
    return {}


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def accuracy_of(case: CaseResult) -> Accuracy | None:
    """The case's accuracy against its reference: its `accuracy.*` metrics and the tolerance its set-up recorded
    (files written before those metrics: the check's own record in the notes), or None where it has none."""
    acc = _notes(case).get(ACCURACY_NOTE)
    acc = acc if isinstance(acc, Mapping) else {}
    rel_l2, max_abs = case.metric(ACCURACY_REL_L2), case.metric(ACCURACY_MAX_ABS)
    if not acc and rel_l2 is None:
        return None
    tolerance = acc.get("tolerance")
    tolerance = tolerance if isinstance(tolerance, Mapping) else {}
    limit = tolerance_of(case, ACCURACY_REL_L2)
    return Accuracy(
        reference=str(acc.get("reference", "reference")),
        rel_l2=rel_l2.value if rel_l2 is not None else _number(acc.get("rel_l2")),
        max_abs=max_abs.value if max_abs is not None else _number(acc.get("max_abs_diff")),
        rule=str(tolerance.get("rule", "")),
        limit=limit if limit is not None else _number(tolerance.get("max_rel_l2")),
    )


def explanations(case: CaseResult) -> list[str]:
    """The sentences a workload recorded to explain a surprising figure of this case; for a case whose check
    failed (it keeps no notes), those its check's message ends with (workloads/surprises.py `explained_check`)."""
    said = _notes(case).get(EXPLAIN_NOTE)
    if isinstance(said, list):
        return [printable(str(s)) for s in said]
    failed = [e.message for e in case.errors if e.kind == "check" and NOTE_MARK in e.message]
    return [printable(s.removesuffix(")")) for m in failed[:1] for s in m.split(NOTE_MARK)[1:]]


def _config(case: CaseResult, batch: str | None, swept: tuple[str, ...]) -> str:
    """The swept parameters other than the batch: a lone one by its value (`bf16`); else, or where only the batch
    is swept, as name=value pairs (`hidden=512`), so a value never stands without its name when nothing varies."""
    varied = [p for p in swept if p != batch and p in case.spec.params]
    if len(varied) == 1:
        return printable(str(case.spec.params[varied[0]]))
    shown = varied or [p for p in case.spec.params if p != batch]
    return printable(",".join(f"{p}={case.spec.params[p]}" for p in shown)) or "-"


def _choice(case: CaseResult, sweep: Sweep) -> Choice:
    latency = case.metric(LATENCY) if case.status is CaseStatus.OK else None
    host, device = case.metric(MEMORY_HOST), case.metric(MEMORY_DEVICE)
    accuracy = accuracy_of(case)
    failed = None
    if case.status is not CaseStatus.OK:
        kind = case.errors[0].kind if case.errors else case.status.value
        failed = "check failed" if kind == "check" else kind
    elif accuracy is not None and accuracy.within is False:
        failed = "over tolerance"
    elif latency is None:
        failed = "not measured"
    batch = case.spec.params.get(sweep.batch) if sweep.batch else None

    def span(m: Any) -> tuple[float, float] | None:
        return (m.low, m.high) if m is not None and m.low is not None and m.high is not None else None

    return Choice(
        case_id=case.id,
        config=_config(case, sweep.batch, sweep.swept),
        batch=batch if isinstance(batch, int) and not isinstance(batch, bool) else None,
        per_call=latency.value if latency else None,
        host_bytes=host.value if host else None,
        device_bytes=device.value if device else None,
        accuracy=accuracy,
        failed=failed,
        per_call_range=span(latency),
        host_range=span(host),
        device_range=span(device),
    )


def _table(sweep: Sweep, rank: str, max_memory: float | None) -> DecisionTable:
    rows = tuple(_choice(c, sweep) for c in sweep.cases)
    draft = DecisionTable(sweep.workload, sweep.device, rank, sweep.batch, rows, (), (), ())
    over = tuple(
        r.case_id for r in rows if max_memory is not None and (m := draft.memory_of(r)) is not None and m > max_memory
    )
    sizes = sweep.sizes
    size_of = {c.id: ",".join(f"{p}={c.spec.params.get(p, '-')}" for p in sizes) for c in sweep.cases}

    def score(r: Choice) -> float:
        value = r.per_item if rank == "time" else draft.memory_of(r)
        return value if value is not None else math.inf

    best, tied = [], {}
    for size in dict.fromkeys(size_of[r.case_id] for r in rows):  # one group without sizes; else one per size
        group = [r for r in rows if size_of[r.case_id] == size]
        ranked = sorted((r for r in group if r.failed is None and r.case_id not in over), key=score)  # ties: run order
        if len(group) > 1 and ranked and math.isfinite(score(ranked[0])):  # a size measured once has no choice
            best.append(ranked[0])
            if together := _not_told_apart(draft, ranked):
                tied[ranked[0].case_id] = together
    notes = tuple(dict.fromkeys(f"{_config(c, sweep.batch, sweep.swept)}: {s}" for c in sweep.cases
                                for s in explanations(c)))  # fmt: skip
    return DecisionTable(sweep.workload, sweep.device, rank, sweep.batch, rows, tuple(best), over, notes, sizes,
                         size_of if sizes else None, tied)  # fmt: skip


def _not_told_apart(table: DecisionTable, ranked: list[Choice]) -> tuple[Choice, ...]:
    """The runners-up whose interval reaches the first's: this run cannot say which of them is better (two
    configurations that run the same code were named "best" by whichever drew the lower median). Rows without an
    interval (a single round) are not tied: nothing says how far they are known."""
    first = table.span_of(ranked[0])
    if first is None:
        return ()
    return tuple(r for r in ranked[1:] if (span := table.span_of(r)) is not None and span[0] <= first[1])


def decision_tables(run: RunResult | None, rank: str = "time", max_memory: float | None = None) -> list[DecisionTable]:
    """One decision table per sweep of the run, in the order its workloads first appear."""
    if rank not in RANKS:
        raise ValueError(f"rank must be one of {', '.join(RANKS)}")
    return [_table(s, rank, max_memory) for s in find_sweeps(run)] if run is not None else []
