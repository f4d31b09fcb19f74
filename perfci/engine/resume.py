"""`perfci run --resume`: which interrupted results file may be continued, and the content hash of the workloads.

A run writes its results after every round with `settings["complete"]` false until the last one
(perfci/engine/runner.py). Resuming continues that file: its rounds and errors are kept as they are, and only the
rounds missing are measured, in the order an uninterrupted run would have used. That is sound only when the rest
would have been measured the same way, so a file is refused (one line, exit 2) when it was measured

- on another runner: any hardware or software difference of the fingerprint (perfci/profilers/fingerprint_changes.py);
- at another git commit;
- with other settings (rounds, seed, threads, timing, CPUs, limits, ...);
- from other workload files: `settings["workloads"]`, a hash of the content of the files the cases came from;
- for another set of cases (other paths, -k, suites, devices or shard).

docs/reliability.md describes the rules and the figures.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from perfci.errors import UsageError
from perfci.format.model import GitInfo, RunResult
from perfci.profilers.fingerprint_changes import change_text, fingerprint_changes
from perfci.workloads.discovery import MODULE_PREFIX, PYTEST_PREFIX, source_stem

WORKLOADS_KEY = "workloads"  # settings entry: content hash of the workload files
RESUMED_KEY = "resumed"  # settings entry: one note per resume
# settings entries that are not measuring settings: the state of the file, and the resume notes
_NOT_COMPARED = ("complete", RESUMED_KEY)


def _source_bytes(source: str) -> bytes:
    if source.startswith(MODULE_PREFIX):
        spec = importlib.util.find_spec(source[len(MODULE_PREFIX) :])
        origin = spec.origin if spec is not None else None
        return Path(origin).read_bytes() if origin and Path(origin).is_file() else source.encode()
    return Path(source.removeprefix(PYTEST_PREFIX)).read_bytes()  # a pytest case's source names its test file


def workloads_digest(sources: Iterable[str]) -> str:
    """sha256 over the files the cases came from: each file's stem and content, in the order of the stems (so a
    file named by a relative or an absolute path hashes alike). Built-in suites hash their module's file."""
    parts = sorted((source_stem(s), hashlib.sha256(_source_bytes(s)).hexdigest()) for s in set(sources))
    return "sha256:" + hashlib.sha256(repr(parts).encode()).hexdigest()


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _settings_difference(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> str | None:
    keys = (set(stored) | set(wanted)) - set(_NOT_COMPARED)
    diff = sorted(k for k in keys if stored.get(k) != wanted.get(k))
    if not diff:
        return None
    if WORKLOADS_KEY in diff:
        return "the workload files changed since (their content hash differs)"
    key = diff[0]
    more = f" and {len(diff) - 1} more" if len(diff) > 1 else ""
    return f"other settings ({key}: {_short(stored.get(key))} then, {_short(wanted.get(key))} now{more})"


def refusal(
    partial: RunResult,
    settings: Mapping[str, Any],
    case_ids: list[str],
    fingerprint: dict[str, Any],
    git: GitInfo | None,
) -> str | None:
    """Why `partial` cannot be continued by a run of `case_ids` with these settings (as the results file holds
    them, the workloads hash included) on this runner (`fingerprint`) at this commit (`git`); None if it can."""
    hardware, software = fingerprint_changes(partial.fingerprint, fingerprint)
    if hardware or software:
        return f"it was measured on another runner or environment ({change_text(hardware + software)})"
    then = partial.git.commit if partial.git is not None else None
    now = git.commit if git is not None else None
    if then != now:
        return f"it was measured at another commit ({then or 'none'} then, {now or 'none'} now)"
    different = _settings_difference(partial.settings, settings)
    if different is not None:
        return f"it was measured with {different}"
    stored = {c.spec.id for c in partial.cases}
    if stored != set(case_ids):
        missing, new = stored - set(case_ids), set(case_ids) - stored
        first = sorted(new)[0] if new else sorted(missing)[0]
        return f"it holds another set of cases ({len(new)} new, {len(missing)} gone, e.g. {first})"
    return None


def check_resumable(
    path: Path,
    partial: RunResult,
    settings: Mapping[str, Any],
    case_ids: list[str],
    fingerprint: dict[str, Any],
    git: GitInfo | None,
) -> None:
    """Raise a one-line UsageError (exit 2) when `partial` (read from `path`) cannot be resumed."""
    why = refusal(partial, settings, case_ids, fingerprint, git)
    if why is not None:
        raise UsageError(f"--resume: cannot continue {path}: {why}; measure afresh into another --out.")


def rounds_in(run: RunResult) -> int:
    return sum(len(c.rounds) for c in run.cases)


def resume_note(partial: RunResult, at: str) -> list[dict[str, Any]]:
    """The file's resume notes, this one added: when, and how many rounds were kept from the interrupted run."""
    earlier = partial.settings.get(RESUMED_KEY)
    notes = list(earlier) if isinstance(earlier, list) else []
    return [*notes, {"at": at, "rounds_kept": rounds_in(partial)}]
