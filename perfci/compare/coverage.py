"""Nothing compared is never a pass: the one rule for baseline cases without a candidate, and for two runs
with no case in common. `perfci compare`, `perfci run` (and its `--confirm`), `perfci ab`, `perfci ci`,
`perfci merge --baseline` and the pytest plugin all decide through `compare_runs` (decide.py), which applies it.

- No case in common (after matching moved pytest ids, case_ids.py): a usage error (exit 2) naming the first id
  of each side, because a comparison of nothing would pass.
- A baseline case with no candidate is a `missing` row, and it fails the gate, unless
  * it was left out on purpose, and then it is not compared at all and one warning counts it: deselected
    (`-k`, `--suite`, `--device`, pytest's `-k`), skipped (by pytest, or a `skipped` case), no such device on this
    runner, or held by another shard;
  * missing cases are allowed (`--allow-missing`, pytest's `--perfci-allow-missing`): the row is kept, with the
    reason, and passes;
  * the expected-changes file lists the removal (`removed = true`, expected.py): likewise.
- A candidate case with no baseline is `new`: listed, never failed.
- A comparison none of whose rows compares anything (every row `new`, or `missing` on purpose; or no row, the
  metrics asked for being in no case of both runs) is a usage error too (`require_compared`).

What a run left out on purpose is known while it runs (`perfci run`'s selection, the pytest session's deselected
and skipped tests); what a results file records of it (`settings["left_out"]`, `settings["shard"]`) is read
back when two files are compared.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from perfci.compare.case_ids import SEPARATOR
from perfci.errors import UsageError
from perfci.format.model import Comparison, MetricComparison, RunResult, Verdict

LEFT_OUT_KEY = "left_out"  # results settings: {case id or pytest test id: why it was left out on purpose}
SHARD_KEY = "shard"  # results settings of a sharded run: "I/N" (perfci/api/shards.py)
ALLOWED = "missing allowed (--allow-missing)"
MISSING_NOTE = "not in the candidate (--allow-missing, or a declared removal, lets it pass)"
IN_OTHER_SHARD = "in another shard"


@dataclass(frozen=True)
class Scope:
    """What the candidate left out on purpose (case or pytest test id -> reason), and whether missing cases are
    allowed. A pytest test id (`bench/test_b.py::test_x[1]`) covers every case of that test, a file every test in it."""

    left_out: Mapping[str, str] = field(default_factory=dict)
    allow_missing: bool = False
    sharded: bool = False  # the candidate holds one shard: baseline cases it lacks are in other shards

    def reason(self, case_id: str) -> str:
        """Why the candidate left `case_id` out on purpose; '' when it did not."""
        if case_id in self.left_out:
            return self.left_out[case_id]
        if SEPARATOR in case_id:  # a pytest case: `<test id>@cpu` or `<test id>::<name>@cpu`
            test = case_id.rpartition("@")[0] or case_id
            while True:
                if test in self.left_out:
                    return self.left_out[test]
                head, sep, _ = test.rpartition(SEPARATOR)
                if not sep:  # the file itself last: a file skipped at collection covers its tests
                    break
                test = head
        return IN_OTHER_SHARD if self.sharded else ""

    def merged(self, other: Scope) -> Scope:
        return Scope({**self.left_out, **other.left_out}, self.allow_missing or other.allow_missing,
                     self.sharded or other.sharded)  # fmt: skip


def recorded_scope(run: RunResult) -> Scope:
    """What a results file says it left out on purpose (its settings)."""
    raw = run.settings.get(LEFT_OUT_KEY)
    left = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
    return Scope(left, sharded=bool(run.settings.get(SHARD_KEY)))


def require_common(baseline: RunResult, candidate: RunResult, labels: tuple[str, str], matched: int = 0) -> None:
    """A usage error (exit 2) when the two runs have no case in common: comparing nothing would pass."""
    if matched or any(baseline.case(c.id) is not None for c in candidate.cases):
        return
    first_b = baseline.cases[0].id if baseline.cases else "(no cases)"
    first_c = candidate.cases[0].id if candidate.cases else "(no cases)"
    raise UsageError(
        f"nothing to compare: {labels[0] or baseline.run_id} and {labels[1] or candidate.run_id} have no case in "
        f"common (first ids: {first_b!r} and {first_c!r}).",
        hint="compare results of the same workloads or tests",
    )


def require_compared(comparison: Comparison, metrics: Sequence[str]) -> Comparison:
    """The comparison, or a usage error (exit 2) when none of its rows compares anything: every row `new`, or
    `missing` and passed on purpose (skipped, allowed, a declared removal), or no row at all (the metrics asked for
    in no case of both runs). Each passed before: "PASS: 2 missing" for a candidate whose every case was skipped,
    "PASS: nothing compared" for `--metric device.time` on a CPU."""
    rows = comparison.rows
    if any(r.verdict is not Verdict.NEW and not (r.verdict is Verdict.MISSING and r.expected) for r in rows):
        return comparison
    if not rows:
        raise UsageError(
            f"nothing compared: no case has {' or '.join(metrics)} in both runs.",
            hint="choose a metric the runs measured (--metric), or compare runs that measured it",
        )
    missing = [r for r in rows if r.verdict is Verdict.MISSING]
    parts = [f"{len(missing)} baseline case(s) not measured ({missing[0].expected})"] if missing else []
    no_data = [r for r in rows if r.verdict is Verdict.NEW and is_baseline_without_data(r.note)]
    # a case the baseline holds but failed or skipped is no news: said as such, with the first one's message
    parts += (
        [f"{len(no_data)} case(s) with no data in the baseline ({no_data[0].case_id}: {no_data[0].note})"]
        if no_data
        else []
    )
    new = sum(r.verdict is Verdict.NEW for r in rows) - len(no_data)
    parts += [f"{new} new case(s), not in the baseline"] if new else []
    raise UsageError(
        f"nothing compared: {' and '.join(parts)}.",
        hint="a gate passes only on what it compared: "
        + (
            "measure the baseline again where its cases ran"
            if no_data
            else "measure at least one of the baseline's cases"
        ),
    )


# the note of a `new` row whose case the baseline holds without data (decide.compare_case): it failed or was skipped
BASELINE_FAILED, BASELINE_SKIPPED, BASELINE_NO_DATA = "baseline failed", "baseline skipped", "baseline has no data"
CANDIDATE_NO_DATA = "candidate has no data"  # a case `ok` in the candidate's file with no round: nothing measured


def is_baseline_without_data(note: str | None) -> bool:
    return note is not None and note.startswith((BASELINE_FAILED, BASELINE_SKIPPED, BASELINE_NO_DATA))


def settle_missing(comparison: Comparison, scope: Scope) -> Comparison:
    """The rule for `missing` rows (module docstring): drop those left out on purpose (one warning counts them),
    pass those allowed or skipped (their `expected` says why), and name the rest, which fail the gate."""
    rows: list[MetricComparison] = []
    left: Counter[str] = Counter()
    for row in comparison.rows:
        if row.verdict is not Verdict.MISSING or row.expected:
            rows.append(row)
        elif row.note.startswith("skipped"):  # the candidate has the case, skipped: left out on purpose
            rows.append(replace(row, expected=row.note))
        elif why := scope.reason(row.case_id):
            left[why.split(":", 1)[0]] += 1
        elif scope.allow_missing:
            rows.append(replace(row, expected=ALLOWED))
        else:
            rows.append(replace(row, note=row.note or MISSING_NOTE))
    warnings = comparison.warnings
    if left:
        counts = ", ".join(f"{why}: {n}" for why, n in sorted(left.items()))
        warnings += (f"{left.total()} baseline case(s) left out on purpose were not compared ({counts})",)
    return replace(comparison, rows=tuple(rows), warnings=warnings)


def allow_missing(comparison: Comparison, reason: str = ALLOWED) -> Comparison:
    """Every failing `missing` row passed, with `reason` (for callers that learn of --allow-missing after
    deciding, e.g. an A/B whose looks decided without it)."""
    rows = tuple(
        replace(r, expected=reason) if r.verdict is Verdict.MISSING and not r.expected else r for r in comparison.rows
    )
    return replace(comparison, rows=rows)
