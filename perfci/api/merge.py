"""`perfci merge`: the results files of a sharded run (`perfci run --shard I/N` in N jobs) joined into one run,
with one results.json, one report, one summary and one exit code, as if one job had measured every case.

Shards are only joined when they are parts of one run: no case measured twice, the same runner class and the same
fingerprint otherwise (the merged file carries one), the same measuring settings and the same git commit, every
part complete, and, for files that record their shard (`settings["shard"]`, "I/N"), every shard 1..N there once.
Anything else is refused with one line that names the two files that disagree, or the shards missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfci.api.compare import checked_fraction, with_expected
from perfci.api.settings import Settings
from perfci.api.shards import SELECTION_KEY, SHARD_KEY, selection_size, shard_text_parts
from perfci.compare.baselines import baseline_path
from perfci.compare.coverage import Scope
from perfci.compare.decide import DecisionSettings, compare_runs
from perfci.compare.gate import ExitCode, gate
from perfci.engine.runner import new_run_id
from perfci.errors import UsageError
from perfci.format.comparison import dump_comparison
from perfci.format.model import Comparison, RunResult
from perfci.format.schema import dump_results, load_results
from perfci.profilers.fingerprint import runner_name
from perfci.profilers.fingerprint_changes import change_text, fingerprint_changes
from perfci.reports.html import write_html
from perfci.reports.markdown import write_markdown
from perfci.work_folder import remove_stale_outputs

# settings that legitimately differ between the shards of one run
_PER_JOB_SETTINGS = ("complete", "shard", "merged_from", "resumed", SELECTION_KEY)  # the selection: checked apart


@dataclass(frozen=True)
class MergeRequest:
    files: list[Path]
    out: Path
    runner: str | None = None  # names baselines/<runner>.json (default: as for `perfci run`)
    baseline: Path | None = None  # compare with this results file instead
    threshold: float | None = None
    allow_missing: bool = False  # baseline cases no shard measured pass (compare/coverage.py)
    fail_on: str | None = None  # --fail-on, else the configuration's


@dataclass(frozen=True)
class MergeOutcome:
    result: RunResult
    comparison: Comparison | None
    out_dir: Path
    written: list[Path] = field(default_factory=list)

    def exit_code(self) -> ExitCode:
        return gate(self.comparison, self.result)


def _measuring_settings(run: RunResult) -> dict[str, Any]:
    return {k: v for k, v in run.settings.items() if k not in _PER_JOB_SETTINGS}


def check_parts(parts: list[tuple[Path, RunResult]]) -> None:
    """Refuse parts that are not shards of one run (one line naming the two files that disagree)."""
    if not parts:
        raise UsageError("perfci merge needs at least one results file.")
    seen: dict[str, Path] = {}
    first_path, first = parts[0]
    for path, run in parts:
        if run.settings.get("complete") is False:
            raise UsageError(f"{path}: the run did not complete (interrupted); merge whole shards only.")
        if runner_name(run.fingerprint) != runner_name(first.fingerprint):
            raise UsageError(
                f"{first_path} and {path} come from different runner classes "
                f"({runner_name(first.fingerprint)} and {runner_name(run.fingerprint)}); merge one class at a time."
            )
        if _measuring_settings(run) != _measuring_settings(first):
            diff = sorted(
                k
                for k in set(_measuring_settings(run)) | set(_measuring_settings(first))
                if _measuring_settings(run).get(k) != _measuring_settings(first).get(k)
            )
            raise UsageError(f"{first_path} and {path} were measured with different settings ({', '.join(diff)}).")
        picked = (first.settings.get(SELECTION_KEY), run.settings.get(SELECTION_KEY))
        if None not in picked and picked[0] != picked[1]:  # shards of `-k a` and `-k b`: each complete, not one run
            raise UsageError(
                f"{first_path} and {path} are shards of different selections of cases ({picked[0]}; {picked[1]}): "
                "other paths, -k, suites or devices.",
                hint="run every shard with the same paths and filters",
            )
        hardware, software = fingerprint_changes(first.fingerprint, run.fingerprint)
        if hardware or software:  # shards on other Python or torch merged under the first's fingerprint
            raise UsageError(
                f"{first_path} and {path} were measured in different environments "
                f"({change_text(hardware + software)}); the merged file would claim one.",
                hint="run every shard of a run on one runner image",
            )
        commits = (first.git.commit if first.git else None, run.git.commit if run.git else None)
        if commits[0] != commits[1]:
            raise UsageError(f"{first_path} and {path} measured different git commits ({commits[0]}, {commits[1]}).")
        for case in run.cases:
            if case.id in seen:
                raise UsageError(f"{seen[case.id]} and {path} both hold case {case.id!r}; shards must not overlap.")
            seen[case.id] = path
    _check_shard_set(parts)
    whole = selection_size(first.settings.get(SELECTION_KEY))
    if whole is not None and len(seen) != whole:
        raise UsageError(
            f"the shards hold {len(seen):,} of the {whole:,} cases they were split from; the merge would look "
            "complete without the others.",
            hint="merge the results.json of every shard of the run",
        )


def _check_shard_set(parts: list[tuple[Path, RunResult]]) -> None:
    """Files that record their shard ("I/N") must be shards of one N, each index once, none missing (a shard
    whose job never ran would otherwise go unnoticed: the merge looked complete). Files without the record
    (written before perfci kept it) are not checked."""
    recorded = [(path, shard_text_parts(run.settings.get(SHARD_KEY))) for path, run in parts]
    known = [(path, s) for path, s in recorded if s is not None]
    if not known:
        return
    if len(known) < len(parts):
        unsharded = next(path for path, s in recorded if s is None)
        raise UsageError(f"{known[0][0]} is shard {known[0][1][0]}/{known[0][1][1]} but {unsharded} records no shard.")
    counts = {s[1] for _, s in known}
    if len(counts) > 1:
        (pa, a), (pb, b) = known[0], next((p, s) for p, s in known if s[1] != known[0][1][1])
        raise UsageError(f"{pa} is shard {a[0]}/{a[1]} but {pb} is shard {b[0]}/{b[1]}: shards of different splits.")
    count = counts.pop()
    by_index: dict[int, Path] = {}
    for path, (index, _) in known:
        if index in by_index:
            raise UsageError(f"{by_index[index]} and {path} are both shard {index}/{count}.")
        by_index[index] = path
    missing = [i for i in range(1, count + 1) if i not in by_index]
    if missing:
        names = ", ".join(f"{i}/{count}" for i in missing)
        raise UsageError(
            f"shard(s) {names} missing: {len(by_index)} of {count} given; the merge would look complete without them.",
            hint="merge the results.json of every shard of the run",
        )


def merge_runs(parts: list[tuple[Path, RunResult]]) -> RunResult:
    """One run holding every part's cases (checked by `check_parts`), in case-id order."""
    check_parts(parts)
    runs = [r for _, r in parts]
    first = runs[0]
    cases = tuple(sorted((c for r in runs for c in r.cases), key=lambda c: c.id))
    settings = {**first.settings, "complete": True, "merged_from": [r.run_id for r in runs]}
    settings.pop("shard", None)
    settings.pop(SELECTION_KEY, None)
    return RunResult(
        run_id=new_run_id(),
        started_at=min(r.started_at for r in runs),
        finished_at=max(r.finished_at for r in runs),
        fingerprint=first.fingerprint,
        git=first.git,
        settings=settings,
        cases=cases,
    )


def merge(settings: Settings, req: MergeRequest) -> MergeOutcome:
    """Join the parts, compare with the baseline (a file given, else baselines/<runner>.json when it exists),
    write results.json, report.html, summary.md (and comparison.json when compared)."""
    checked_fraction("--threshold", req.threshold)  # NaN, inf or 1e308 left every row without one
    written_to = (req.out / "results.json").resolve()
    if any(Path(p).resolve() == written_to for p in req.files):  # the shard was replaced by the merge
        raise UsageError(f"--out {req.out}: its results.json is one of the files merged; choose another folder.")
    files = list(req.files)
    parts = [(f, load_results(f)) for f in files]
    merged = merge_runs(parts)
    base_file = req.baseline or baseline_path(settings.runner_class(req.runner, merged.fingerprint))
    if req.baseline is not None and not base_file.exists():
        if str(req.baseline).startswith("store:"):  # `compare`'s rolling baseline from the history store
            raise UsageError(
                f"--baseline {req.baseline}: merge compares with a results file, not the history store.",
                hint=f"merge, then: perfci compare {req.out / 'results.json'} --baseline {req.baseline}",
            )
        raise UsageError(f"{req.baseline}: baseline file not found.")
    base = load_results(base_file) if base_file.exists() else None
    out = req.out
    dump_results(merged, out / "results.json")
    written = [out / "results.json", out / "report.html", out / "summary.md"]
    comparison = None
    if base is not None:
        decision = DecisionSettings(
            threshold=settings.threshold(req.threshold),  # `threshold` and `fail_on` as configured, as compare's
            thresholds=dict(settings.cfg.thresholds),
            fail_on=settings.fail_on(req.fail_on),
        )
        scope = Scope(allow_missing=req.allow_missing)
        comparison = compare_runs(base, merged, decision, (str(base_file), str(out)), scope=scope)
        comparison = with_expected(comparison, None)  # declared removals and expected changes, as `perfci run`
        dump_comparison(comparison, out / "comparison.json")
        written.append(out / "comparison.json")
        remove_stale_outputs(out, "junit.xml")
    else:
        remove_stale_outputs(out, "comparison.json", "junit.xml")
    write_html(out / "report.html", merged, comparison, base)
    write_markdown(out / "summary.md", merged, comparison, base)
    return MergeOutcome(merged, comparison, out, written)
