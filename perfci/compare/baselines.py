"""Stored baselines: `baselines/<runner>.json`, one per runner class, committed to the repository.

A baseline is an ordinary results file (schema perfci.results v1) whose `settings["baseline"]` records why and
when it was accepted: `{"reason", "accepted_at", "source", "runner", "previous"}` (`previous`: run id and commit
of the baseline it replaced). The git history of the file is the history of accepted baselines.

Runner class (resolved in api/settings.py), first found wins: `--runner`, `$PERFCI_RUNNER`, the configuration's
`runner`, else a name derived from the fingerprint (`perfci env` shows it), e.g. `cpu-amd-epyc-7b13-2c`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from perfci.errors import ResultsFormatError, UsageError
from perfci.format.model import CaseStatus, GitInfo, RunResult
from perfci.format.schema import dump_results, load_results
from perfci.work_folder import WORK_FOLDER

BASELINE_DIR = Path("baselines")
RUNNER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def check_runner_name(name: str) -> str:
    """A runner class name as given (it names a file under baselines/); UsageError when it cannot."""
    if not RUNNER_RE.fullmatch(name):
        raise UsageError(f"runner class {name!r} is not a valid name.", hint="use letters, digits, '.', '_' and '-'")
    return name


def baseline_path(runner: str, folder: Path = BASELINE_DIR) -> Path:
    return folder / f"{runner}.json"


def no_baseline_note(path: Path, runner: str) -> str:
    """There is no stored baseline of this runner class (a first run on a new runner): the file looked for and the
    baselines there are (a `cpu.json` beside a runner class of `cpu-amd-epyc-2c` passed in silence)."""
    others = sorted(p.stem for p in path.parent.glob("*.json")) if path.parent.is_dir() else []
    there = f"; stored baselines: {', '.join(others)} (choose one with --runner NAME)" if others else ""
    return f"no baseline of runner class {runner!r} ({path} does not exist){there}"


def latest_results(runs_dir: Path = Path(WORK_FOLDER) / "runs") -> Path:
    found = sorted(runs_dir.glob("*/results.json"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise UsageError(f"no results under {runs_dir}.", hint="run `perfci run` first or name a results file")
    return found[-1]


def accept(
    run: RunResult, reason: str, source: str, runner: str, previous: RunResult | Previous | None, now: str = ""
) -> RunResult:
    """The run as a baseline, with its acceptance record (pure)."""
    if not reason.strip():
        raise UsageError("a baseline update needs a reason.", hint='pass --reason "why these numbers are right"')
    if run.settings.get("complete") is False:
        raise UsageError(f"{source}: the run did not complete; it cannot become a baseline.")
    if all(c.status is CaseStatus.ERROR for c in run.cases):
        raise UsageError(f"{source}: every case failed; there is nothing to accept.")
    if isinstance(shard := run.settings.get("shard"), str):  # its cases only: the other shards' would be `new`
        raise UsageError(
            f"{source}: holds shard {shard} of a run, not the whole run; it cannot become a baseline.",
            hint="join the shards first (perfci merge SHARD_FILES --out merged), then accept merged/results.json",
        )
    record = {
        "reason": reason.strip(),
        "accepted_at": now or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "source": source,
        "runner": runner,
        "previous": (
            {"run_id": previous.run_id, "commit": previous.git.commit if previous.git else None} if previous else None
        ),
    }
    return replace(run, settings={**run.settings, "baseline": record})


@dataclass(frozen=True)
class Previous:
    """What a baseline update records of the baseline it replaces (and its case ids, to say what is dropped)."""

    run_id: str
    git: GitInfo | None
    case_ids: frozenset[str] = frozenset()


def acceptance_warnings(run: RunResult, previous: Previous | None) -> list[str]:
    """What a team should know before relying on a new baseline: its failed cases (no figure to compare with) and
    the cases of the baseline it replaces that it drops (they will be `new` in the next comparison)."""
    out = []
    failed = [c.id for c in run.cases if c.status is not CaseStatus.OK]
    if failed:
        out.append(
            f"{len(failed)} of the new baseline's {len(run.cases)} case(s) did not measure (e.g. {failed[0]}): it "
            "has no figure for them, and comparisons name them `new`"
        )
    if previous is not None and previous.case_ids:
        dropped = sorted(previous.case_ids - {c.id for c in run.cases})
        if dropped:
            whole = " (no case in common)" if len(dropped) == len(previous.case_ids) else ""
            out.append(
                f"the new baseline drops {len(dropped)} of the {len(previous.case_ids)} case(s) of the one it "
                f"replaces{whole}, "
                f"e.g. {dropped[0]}: they are no longer compared"
            )
    return out


def previous_baseline(path: Path) -> Previous | None:
    """The baseline at `path`, read and validated (its id and commit are all that is kept);
    None when there is none or it is broken (a broken old baseline is replaced, not an obstacle)."""
    if not path.exists():
        return None
    try:
        run = load_results(path)
    except ResultsFormatError:
        return None
    return Previous(run.run_id, run.git, frozenset(c.id for c in run.cases))


def update_baseline(
    results: Path, reason: str, runner: str, folder: Path = BASELINE_DIR, run: RunResult | None = None
) -> tuple[Path, RunResult, list[str]]:
    """`results` (already loaded as `run`, when given) as the baseline of `runner`, with `acceptance_warnings`."""
    run = run if run is not None else load_results(results)
    path = baseline_path(runner, folder)
    previous = previous_baseline(path)
    accepted = accept(run, reason, str(results), runner, previous)
    dump_results(accepted, path)
    return path, accepted, acceptance_warnings(run, previous)


def record(run: RunResult) -> dict[str, Any]:
    rec = run.settings.get("baseline")
    return rec if isinstance(rec, dict) else {}


def load_baseline(runner: str, folder: Path = BASELINE_DIR) -> RunResult:
    path = baseline_path(runner, folder)
    if not path.exists():
        known = sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []
        hint = f"known runner classes: {', '.join(known)}" if known else "create one with `perfci baseline update`"
        raise UsageError(f"no baseline for runner class {runner!r} ({path} does not exist).", hint=hint)
    return load_results(path)
