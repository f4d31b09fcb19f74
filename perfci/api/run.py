"""`perfci run` as a library call: select cases, measure them, compare with the stored baseline (confirming
unsettled cases by A/B when asked), write results.json, report.html, summary.md and comparison.json."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perfci.api.ab import Sources, confirm_flagged
from perfci.api.compare import (
    check_expected,
    checked_fraction,
    noise_lookup,
    unsettled_cases,
    with_expected,
    with_noise_note,
)
from perfci.api.select import CaseChoice, compile_patterns, nothing_selected, present_devices, select_cases
from perfci.api.settings import Settings
from perfci.api.shards import SELECTION_KEY, Shard, selection_text
from perfci.compare.baselines import baseline_path, no_baseline_note
from perfci.compare.coverage import LEFT_OUT_KEY, Scope
from perfci.compare.decide import DecisionSettings, compare_runs
from perfci.compare.gate import ExitCode, gate
from perfci.compare.history_noise import HistoryNoise
from perfci.engine.progress import ProgressFn
from perfci.engine.resume import WORKLOADS_KEY, check_resumable, workloads_digest
from perfci.engine.runner import Runner, RunSettings, git_info
from perfci.errors import UsageError
from perfci.format.comparison import comparison_to_dict, dump_comparison
from perfci.format.model import CaseSpec, Comparison, RunResult
from perfci.format.schema import load_results, run_to_dict
from perfci.options import SEED
from perfci.patterns import pytest_expression_hint
from perfci.profilers.fingerprint import fingerprint
from perfci.profilers.timing import TimingSettings
from perfci.reports.decisions import BY_TIME, DecisionView
from perfci.reports.html import write_html
from perfci.reports.markdown import write_markdown
from perfci.reports.sweeps import best_configurations
from perfci.work_folder import mark_work_folder, new_output_folder, output_folder_lock, remove_stale_outputs
from perfci.workloads.conventional import pytest_benchmarks_in
from perfci.workloads.selection import Selection

CONFIRM_REMEDY = "Re-run with --confirm to re-measure them by A/B against the baseline's commit."
NO_COMMIT_REMEDY = (
    "The baseline records no git commit, so --confirm cannot re-measure them; an A/B of two revisions settles them "
    "(perfci ab BASE HEAD)."
)


def default_run_out() -> Path:
    return new_output_folder("runs")


@dataclass(frozen=True, kw_only=True)
class RunRequest:
    paths: list[Path] | None = None
    pytest: list[Path] | None = None  # pytest files or folders whose benchmark tests are cases (perfci ci's runs)
    patterns: list[str] | None = None
    suites: list[str] | None = None
    devices: list[str] | None = None
    out: Path | None = None
    rounds: int | None = None
    threads: int | None = None
    cpus: str | None = None
    seed: int = 0
    timeout_s: float | None = None
    budget_s: float | None = None
    memory_limit: str | None = None
    speed_reference: bool | None = None
    baseline: Path | None = None
    runner: str | None = None
    threshold: float | None = None
    confirm: bool = False
    history_noise: bool | None = None
    db: str | None = None
    shard: Shard | None = None  # keep only this shard's cases (perfci/api/shards.py)
    gpu_mode: str | None = None  # hot | cold | graph | sustained | sustained-cold (docs/measurement.md)
    fail_on: str | None = None  # --fail-on: regression | slower (None: configuration, then regression)
    resume: bool = False  # --resume: continue the interrupted results.json in `out` (perfci/engine/resume.py)
    allow_missing: bool = False  # --allow-missing: baseline cases not measured pass (compare/coverage.py)
    decisions: DecisionView = BY_TIME  # --rank, --max-memory of the decision tables (reports/decisions.py)


def run_settings(settings: Settings, req: RunRequest) -> RunSettings:
    timing = TimingSettings(speed_reference=settings.speed_reference(req.speed_reference))
    timing = replace(timing, budget_s=settings.round_time_s(req.budget_s))
    timing = replace(timing, gpu_mode=settings.gpu_mode(req.gpu_mode))
    out = RunSettings(
        rounds=settings.rounds(req.rounds),
        seed=settings.resolve(SEED, req.seed),  # held to the option's kind: a text seed failed every case in its worker
        threads=settings.threads(req.threads),
        cpu_affinity=settings.cpus(req.cpus),
        case_timeout_s=settings.case_timeout_s(req.timeout_s),
        timing=timing,
    )
    limit = settings.memory_limit(req.memory_limit)
    return replace(out, memory_limit_bytes=limit) if limit else out


@dataclass(frozen=True)
class Planned:
    """A run checked and ready to measure: the cases, settings, and the baseline it will be compared with."""

    choice: CaseChoice
    out_dir: Path
    settings: RunSettings
    runner: str
    baseline_path: Path
    baseline: RunResult | None
    decision: DecisionSettings
    noise: HistoryNoise | None  # the learned cross-job noise, when --history-noise
    workloads: str = ""  # content hash of the workload files (settings["workloads"], perfci/engine/resume.py)
    resume_from: RunResult | None = None  # --resume: the interrupted run in out_dir (None: measure from the start)
    shard: Shard | None = None  # --shard I/N: recorded in the results, so that `perfci merge` can check the set
    left_out: Mapping[str, str] = field(default_factory=dict)  # baseline cases left out on purpose, and why
    selection: str = ""  # with --shard: the whole selection it was split from (api/shards.selection_text)

    def extra_settings(self) -> dict[str, Any]:
        """What the runner writes into the results' settings beside the run settings."""
        left_out = {LEFT_OUT_KEY: dict(self.left_out)} if self.left_out else {}
        sharded = {**self.shard.settings(), SELECTION_KEY: self.selection} if self.shard is not None else {}
        return {WORKLOADS_KEY: self.workloads, **sharded, **left_out}

    def results_settings(self) -> dict[str, Any]:
        """What the results file's settings will hold, less `complete` and the resume notes."""
        return {**self.settings.as_dict(), **self.extra_settings()}


def _resumable(planned: Planned) -> RunResult | None:
    """--resume: the interrupted results.json in the output folder, checked (perfci/engine/resume.py); None when
    there is none (nothing was written before the interruption: the run starts from the beginning)."""
    path = planned.out_dir / "results.json"
    if not path.exists():
        return None
    partial = load_results(path)
    ids = [s.id for s in planned.choice.cases]
    check_resumable(path, partial, planned.results_settings(), ids, fingerprint(), git_info(Path.cwd()))
    return partial


def left_out_on_purpose(settings: Settings, req: RunRequest, choice: CaseChoice, baseline: RunResult) -> dict[str, str]:
    """The baseline's cases this run leaves out on purpose, and why: deselected (`-k`, `--suite`, `--device`), a
    device this runner lacks, or left out at discovery. Recorded in the results (`settings["left_out"]`), so that
    no comparison counts them missing (compare/coverage.py); a case the workloads no longer define is missing."""
    chosen = {s.id for s in choice.cases}
    known = {s.id: reason for s, reason in choice.left_out}
    wanted = Selection(patterns=compile_patterns(req.patterns), suites=tuple(settings.suites(req.suites)))
    devices = Selection(devices=tuple(settings.devices(req.devices) or present_devices()))
    out: dict[str, str] = {}
    for case in baseline.cases:
        if case.id in chosen:
            continue
        if case.id in known:
            out[case.id] = known[case.id]
        elif not wanted.keeps(case.spec):
            out[case.id] = "deselected: -k or --suite"
        elif not devices.keeps(case.spec):
            out[case.id] = f"device {case.device} not selected or not on this runner"
    return out


def discovered_left_out(choice: CaseChoice) -> dict[str, str]:
    """With no baseline: the discovered cases this run leaves out, and why (deselected by -k or --suite, a device
    not selected, a skip rule), recorded in the results so that a later `perfci compare` of this file against one
    that has them does not count them missing."""
    out = {s.id: "deselected: -k or --suite" for s in choice.deselected}
    out.update({s.id: reason for s, reason in choice.left_out})
    return out


def _pytest_tests_hint(paths: list[Path]) -> str | None:
    """Where the paths given hold pytest benchmarks and no workload (`perfci run tests/`): how to measure them."""
    found = pytest_benchmarks_in(paths)
    if not found:
        return None
    shown, flags = " ".join(str(p) for p in paths), " ".join(f"--pytest {p}" for p in paths)
    what = (
        f"{found[0]} and {len(found) - 1} more are pytest benchmarks, not perfci workloads: measure them"
        if len(found) > 1
        else f"{found[0]} is a pytest benchmark, not a perfci workload: measure it"
    )
    return f"{what} with `pytest {shown} --perfci-out DIR`, or compare two revisions with `perfci ab REV {flags}`"


def plan_run(settings: Settings, req: RunRequest) -> Planned:
    """Everything that can be refused before measuring: cases, settings, the baseline and the history store."""
    choice = select_cases(settings, req.paths, req.patterns, req.suites, req.devices, req.pytest)
    if not choice.cases:
        listing = "see what would run with 'perfci list' (add --all for the cases left out)"
        hint = pytest_expression_hint(req.patterns) or _pytest_tests_hint(settings.paths(req.paths)) or listing
        why = nothing_selected(req.patterns, req.suites, req.devices, choice)
        raise UsageError(f"no cases to run: {why}.", hint=hint)
    workloads = workloads_digest(s.source for s in choice.cases)  # before sharding: every shard hashes alike
    full_choice = choice
    if req.shard is not None:
        held = req.shard.pick(s.id for s in choice.cases)  # none when there are more shards than cases
        choice = replace(choice, cases=[s for s in choice.cases if s.id in held])
    if req.resume and req.out is None:
        raise UsageError("--resume needs --out: the folder of the interrupted run.")
    rs = run_settings(settings, req)
    runner = settings.runner_class(req.runner, fingerprint())
    base_path = req.baseline or baseline_path(runner)
    lookup = noise_lookup(settings, req.history_noise, req.db, runner)  # opens (and checks) the store now
    if req.baseline is not None and not base_path.exists():
        raise UsageError(f"{req.baseline}: baseline file not found.")
    baseline = load_results(base_path) if base_path.exists() else None
    if req.confirm and baseline is None:  # the gate was asked for: measuring, comparing nothing, passed
        raise UsageError(
            f"--confirm: {no_baseline_note(base_path, runner)}, so there is nothing to confirm.",
            hint="pass --baseline FILE or --runner NAME, or store a baseline (perfci baseline update)",
        )
    if baseline is not None:
        check_expected(None)  # ./perfci-expected.toml, which the comparison will apply: refused now when malformed
        _require_common_before_measuring(baseline, base_path, choice.cases)
    decision = DecisionSettings(
        threshold=settings.threshold(checked_fraction("--threshold", req.threshold)),  # the configured one too
        thresholds=dict(settings.cfg.thresholds),
        job_noise_lookup=lookup,
        fail_on=settings.fail_on(req.fail_on),
    )
    out = req.out or default_run_out()
    left_out = (
        left_out_on_purpose(settings, req, full_choice, baseline)
        if baseline is not None
        else discovered_left_out(full_choice)
    )
    planned = Planned(choice, out, rs, runner, base_path, baseline, decision, lookup, workloads, shard=req.shard,
                      left_out=left_out, selection=selection_text(s.id for s in full_choice.cases))  # fmt: skip
    return replace(planned, resume_from=_resumable(planned)) if req.resume else planned


def _require_common_before_measuring(baseline: RunResult, path: Path, cases: list[CaseSpec]) -> None:
    """The comparison after the run would refuse a baseline with none of the run's cases (comparing nothing would
    pass): said before measuring, not after."""
    if not cases or any(baseline.case(s.id) is not None for s in cases):
        return
    raise UsageError(
        f"nothing to compare: the baseline {path} has none of the {len(cases)} case(s) this run would measure "
        f"(the baseline's first: {baseline.cases[0].id if baseline.cases else 'none'}; this run's first: "
        f"{cases[0].id}).",
        hint="choose the workloads the baseline holds, compare with another --baseline, or make one of these cases "
        "(perfci run --out DIR, then perfci baseline update DIR/results.json --reason ...)",
    )


@dataclass(frozen=True)
class RunOutcome:
    result: RunResult
    comparison: Comparison | None
    baseline: RunResult | None
    out_dir: Path
    unsettled: list[str] = field(default_factory=list)  # cases the stored baseline could not settle
    decisions: DecisionView = BY_TIME  # the decision tables' view, the run's tables worked out once

    def exit_code(self) -> ExitCode:
        return gate(self.comparison, self.result)

    @property
    def unsettled_remedy(self) -> str:
        """What settles the unsettled cases: --confirm where the baseline records its commit."""
        has_commit = self.baseline is not None and self.baseline.git is not None and bool(self.baseline.git.commit)
        return CONFIRM_REMEDY if has_commit else NO_COMMIT_REMEDY

    def results_document(self) -> dict[str, Any]:
        """What `--format json` prints: the run as its results.json document, plus `sweeps`, the best
        configuration of each workload whose parameters sweep (perfci/reports/sweeps.py; not part of the file)."""
        return {**run_to_dict(self.result), "sweeps": best_configurations(self.result)}

    def json_document(self) -> dict[str, Any]:
        """`--format json`'s one document: `results_document`, plus `comparison` (the comparison.json document)
        when the run was compared with a baseline (two documents printed one after the other were not JSON)."""
        doc = self.results_document()
        if self.comparison is not None:
            doc["comparison"] = comparison_to_dict(self.comparison)
        return doc


def measure(planned: Planned, specs: list[CaseSpec], progress: ProgressFn | None = None) -> RunResult:
    mark_work_folder(planned.out_dir)  # the default, or any --out in .perfci/: ignored by git (once measuring)
    runner = Runner(planned.settings, planned.out_dir, progress, extra_settings=planned.extra_settings())
    return runner.run(specs, planned.resume_from)


def finish_run(
    settings: Settings,
    req: RunRequest,
    planned: Planned,
    result: RunResult,
    env: Mapping[str, str],
    notify: Callable[[str], None] = lambda message: None,
) -> RunOutcome:
    """Compare the measured run with the baseline (confirming by A/B when asked) and write the reports."""
    comparison, base, out_dir = None, planned.baseline, planned.out_dir
    if base is not None:
        labels = (str(planned.baseline_path), str(out_dir))
        scope = Scope(allow_missing=req.allow_missing)  # and what the run left out on purpose, in its settings
        comparison = with_noise_note(compare_runs(base, result, planned.decision, labels, scope=scope), planned.noise)
        if req.confirm:
            sources = Sources(req.paths, req.suites)
            comparison = confirm_flagged(
                settings, comparison, base, sources, out_dir, planned.settings, planned.decision, env, notify
            )
        comparison = with_expected(comparison, None)
        dump_comparison(comparison, out_dir / "comparison.json")
        remove_stale_outputs(out_dir, "junit.xml")
    else:
        remove_stale_outputs(out_dir, "comparison.json", "junit.xml")
    decisions = req.decisions.for_run(result)  # the report, summary.md and the terminal show the same tables
    write_html(out_dir / "report.html", result, comparison, base, decisions)
    write_markdown(out_dir / "summary.md", result, comparison, base, decisions)
    unsettled = unsettled_cases(comparison, planned.decision) if comparison is not None and not req.confirm else []
    return RunOutcome(result, comparison, base, out_dir, unsettled, decisions)


def run(settings: Settings, req: RunRequest, env: Mapping[str, str], progress: ProgressFn | None = None) -> RunOutcome:
    """The whole `perfci run` for a Python caller (no printing): plan, measure, compare, write."""
    planned = plan_run(settings, req)
    with output_folder_lock(planned.out_dir):
        result = measure(planned, planned.choice.cases, progress)
        return finish_run(settings, req, planned, result, env)
