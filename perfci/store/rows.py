"""A run as the history store writes it (`prepare_run`): the values of its `runs` row and of its `measurements`
rows, as plain tuples. No database code here: `perfci history ingest` imports this before it starts the worker
processes that read the files, and the database driver (SQLAlchemy) only while they read."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass

from perfci.format.model import CaseStatus, Direction, RunResult
from perfci.metrics.definition import MetricRegistry
from perfci.metrics.registry import default_registry

# a `measurements` row as the store writes it: these columns, in this order (plain tuples, no ORM objects)
ROW_COLUMNS = ("run", "case_id", "metric", "unit", "direction", "value", "low", "high", "rounds", "log_mean", "log_sd")
_NO_ROUNDS = (None, None, None)
_DIRECTION = {d: d.value for d in Direction}  # the plain text (an enum's `.value` is a slow property)

Row = tuple[str, str, str, str, float, "float | None", "float | None", "int | None", "float | None", "float | None"]

# results settings of one shard of a run: "I/N" (perfci/api/shards.py; compare/coverage.py reads it too). A shard is
# part of a run, never stored: its merge (`perfci merge`) is the whole run
SHARD_KEY = "shard"
MERGE_HINT = "join the shards with 'perfci merge SHARD_FILES... --out DIR' and ingest DIR/results.json"


@dataclass(frozen=True)
class PreparedRun:
    """A run as the store writes it: the values of its `runs` row and its `measurements` rows (ROW_COLUMNS
    without the first, the run's key, which the store assigns). Plain values: made once per run, in a worker
    process when `perfci history ingest` loads files in parallel, and sent to the writing process by pickle.
    `refusal` is why the run cannot be stored (a value that is not finite, a shard of a run), with a hint
    (`remedy`); it is raised only when the run is about to be written, so a run that is already stored is skipped
    as before."""

    run_id: str
    started_at: str
    finished_at: str
    commit: str | None
    branch: str | None
    dirty: bool | None
    fingerprint: str  # JSON, keys sorted
    rows: tuple[Row, ...]
    refusal: str | None = None
    remedy: str | None = None


def _round_stats(values: list[float | None]) -> tuple[int | None, float | None, float | None]:
    """Rounds, and mean and sd of the log of a metric's per-round values (the compare rules' per-round values, in
    round order; None where a round has none); all None for fewer than 2 rounds. Plain floats: statistics.stdev's
    exact arithmetic made ingest 4x slower."""
    log = math.log
    logs = [log(v) for v in values if v is not None and v > 0]
    n = len(logs)
    if n < 2:
        return _NO_ROUNDS
    mean = math.fsum(logs) / n
    return n, mean, math.sqrt(math.fsum([(x - mean) ** 2 for x in logs]) / (n - 1))


def prepare_run(run: RunResult, registry: MetricRegistry | None = None) -> PreparedRun:
    """The rows of a run (ok cases only): every metric a case has, with the round statistics of those whose
    definition keeps them (`MetricDef.history_rounds`: the timed ones)."""
    rows: list[Row] = []
    refusal = remedy = None
    shard = run.settings.get(SHARD_KEY)
    if shard:  # stored, its cases would stand for the whole run; and the merged file would store them again
        refusal = f"run {run.run_id} is shard {shard} of a run, not a whole run; the history keeps whole runs only."
        remedy = MERGE_HINT
    isfinite, ok, direction, intern = math.isfinite, CaseStatus.OK, _DIRECTION, sys.intern
    known = registry or default_registry()
    kept = {d.name: d for d in known.definitions if d.history_rounds}
    for c in () if shard else run.cases:
        if c.status is not ok:
            continue
        case_id = c.id
        for m in c.metrics:
            value, low, high = m.value, m.low, m.high
            if not (isfinite(value) and (low is None or isfinite(low)) and (high is None or isfinite(high))):
                refusal = (
                    f"run {run.run_id}: case {case_id}, metric {m.name}: a value is not a finite number "
                    f"({value}, interval {low}..{high}); the history store takes only finite numbers."
                )
                break
            # as floats: a results file may hold an integer past 64 bits (JSON has no limit), which the columns
            # (double precision) take as a float but SQLite's driver refuses as an integer
            low = None if low is None else float(low)
            high = None if high is None else float(high)
            # one string object per metric name and unit: a file's rows go to the writing process by pickle,
            # which sends a string once per object (pickling and unpickling a file took 3.3 ms instead of 5.2)
            name = intern(m.name)
            d = kept.get(name)
            stats = _round_stats([d.values(r, c) for r in c.rounds]) if d is not None else _NO_ROUNDS
            rows.append((case_id, name, intern(m.unit), direction[m.direction], float(value), low, high, *stats))
        if refusal:
            break
    git = run.git
    return PreparedRun(
        run_id=run.run_id, started_at=run.started_at, finished_at=run.finished_at,
        commit=git.commit if git else None, branch=git.branch if git else None, dirty=git.dirty if git else None,
        fingerprint=json.dumps(run.fingerprint, sort_keys=True), rows=() if refusal else tuple(rows), refusal=refusal,
        remedy=remedy,
    )  # fmt: skip
