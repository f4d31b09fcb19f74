"""`perfci run`, `perfci list`, `perfci env`: options, printing and exit codes over perfci.api (select.py,
run.py); which cases run and how settings resolve is documented there and in docs/settings.md."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from perfci.api.run import Planned, RunOutcome, RunRequest, finish_run, measure, plan_run
from perfci.api.select import CaseChoice, case_row, nothing_selected, select_cases
from perfci.api.shards import Shard, empty_shard_note, split, split_text
from perfci.cli.app import (
    DurationsOpt,
    OutputFormat,
    ShardOpt,
    app,
    consoles,
    emit,
    guard,
    note,
    plain_value,
    print_comparison,
    print_decisions,
    progress_bar,
    project_settings,
    sharded,
    whole_lines,
    writable_folder,
)
from perfci.cli.compare import AllowMissing, LockClocksOpt, print_unsettled_hint
from perfci.cli.options import (
    DEPRECATED_BUDGET,
    ConfigOpt,
    CpusOpt,
    DbOpt,
    DeprecatedBudgetOpt,
    DeviceOpt,
    ExitZeroOpt,
    FailOnOpt,
    FmtOpt,
    GpuModeOpt,
    HistoryNoiseOpt,
    MaxMemoryOpt,
    MemoryOpt,
    PatternOpt,
    RankOpt,
    RoundsOpt,
    RoundTimeOpt,
    RunnerOpt,
    SeedOpt,
    SuiteOpt,
    ThreadsOpt,
    ThresholdOpt,
    TimeoutOpt,
    option,
    unused_db_note,
)
from perfci.compare.gate import ExitCode
from perfci.format.model import RunResult
from perfci.options import SEED, SPEED_REFERENCE
from perfci.patterns import pytest_expression_hint
from perfci.profilers.fingerprint import fingerprint, runner_name
from perfci.profilers.nvml import locked_sm_clocks
from perfci.reports.terminal import run_table, verdict_line
from perfci.work_folder import output_folder_lock

Paths = Annotated[list[Path] | None, typer.Argument(help="Workload files or folders.")]
OutOpt = Annotated[Path | None, typer.Option(help="Output folder (default .perfci/runs/<timestamp>).")]
SpeedRefOpt = Annotated[bool | None, option(SPEED_REFERENCE)]
BaselineOpt = Annotated[Path | None, typer.Option(help="Results file to compare with.")]
ConfirmOpt = Annotated[
    bool, typer.Option("--confirm", help="Re-measure flagged cases by A/B against the baseline's commit.")
]
ResumeOpt = Annotated[
    bool,
    typer.Option(
        "--resume",
        help="Continue the interrupted run in --out: measure only the rounds its results.json lacks (refused when "
        "the runner, settings, git commit, cases or workload files differ).",
    ),
]


BUILTIN_DEFAULT_NOTE = (
    "no workload paths given or configured: measuring perfci's built-in default suite "
    "(name yours with perfci run PATH..., or paths = [...] in [tool.perfci])"
)


def note_other_devices(choice: CaseChoice) -> None:
    skipped = [(spec, reason) for spec, reason in choice.left_out if not reason.startswith(("device ", "shard "))]
    if skipped:  # fp16 variants of a model on a CPU vanished from every output without a word
        spec, reason = skipped[0]
        note(
            f"note: {len(skipped)} case(s) left out by their workloads' skip rules (e.g. {spec.id}: {reason}); "
            "'perfci list --all' lists them."
        )
    if choice.other_devices:
        devices = choice.other_device_names()
        note(
            f"note: {choice.other_devices} case(s) for {', '.join(devices)} left out: no such device on this runner "
            f"(pass --device {devices[0].split(':')[0]} to include them)."
        )


@app.command()
def run(
    paths: Paths = None, patterns: PatternOpt = None, suites: SuiteOpt = None, devices: DeviceOpt = None,
    config: ConfigOpt = None, out: OutOpt = None, rounds: RoundsOpt = None, threads: ThreadsOpt = None,
    cpus: CpusOpt = None, seed: SeedOpt = SEED.default, timeout: TimeoutOpt = None,
    round_time: RoundTimeOpt = None, budget: DeprecatedBudgetOpt = None, memory_limit: MemoryOpt = None,
    speed_reference: SpeedRefOpt = None, baseline: BaselineOpt = None,
    runner: RunnerOpt = None, threshold: ThresholdOpt = None, confirm: ConfirmOpt = False,
    history_noise: HistoryNoiseOpt = None, db: DbOpt = None, exit_zero: ExitZeroOpt = False,
    fmt: FmtOpt = OutputFormat.table, shard: ShardOpt = None, gpu_mode: GpuModeOpt = None, fail_on: FailOnOpt = None,
    resume: ResumeOpt = False, durations: DurationsOpt = None, lock_clocks: LockClocksOpt = False,
    allow_missing: AllowMissing = False, rank: RankOpt = None, max_memory: MaxMemoryOpt = None,
) -> None:  # fmt: skip
    """Discover and run workloads, write results.json and report.html, compare with the baseline."""
    if budget is not None:
        note(DEPRECATED_BUDGET)
    request = RunRequest(
        paths=paths, patterns=patterns, suites=suites, devices=devices, out=out, rounds=rounds, threads=threads,
        cpus=cpus, seed=seed, timeout_s=timeout, budget_s=round_time if round_time is not None else budget,
        memory_limit=memory_limit,
        speed_reference=speed_reference, baseline=baseline, runner=runner, threshold=threshold, confirm=confirm,
        history_noise=history_noise, db=db, shard=shard, gpu_mode=gpu_mode, fail_on=fail_on, resume=resume,
        allow_missing=allow_missing,
    )  # fmt: skip

    def body() -> int:
        settings = project_settings(config)
        req = replace(request, shard=sharded(shard, durations), decisions=settings.decisions(rank, max_memory))
        planned = plan_run(settings, req)  # the baseline and the store are checked before measuring
        if not (settings.paths(req.paths) or settings.suites(req.suites)):
            note(BUILTIN_DEFAULT_NOTE)
        note_other_devices(planned.choice)
        if planned.shard is not None and not planned.choice.cases:
            note(empty_shard_note(planned.shard))
        writable_folder(planned.out_dir, "--out")  # after the inputs are checked, before measuring
        if resume:
            note_resume(planned)
        with output_folder_lock(planned.out_dir):
            with locked_sm_clocks(lock_clocks, note):
                result = measure_with_progress(planned)
            outcome = finish_run(settings, req, planned, result, settings.env, note)
        print_run(outcome, fmt)
        if db is not None and planned.noise is None:  # a user who passed --db to keep the run: it was not kept
            note(unused_db_note(str(planned.out_dir / "results.json")))
        return ExitCode.OK if exit_zero else outcome.exit_code()

    guard(body)


def note_resume(planned: Planned) -> None:
    partial = planned.resume_from
    if partial is None:
        note(f"note: --resume: no results in {planned.out_dir}; measuring from the start.")
    else:
        kept = sum(len(c.rounds) for c in partial.cases)
        note(f"resuming run {partial.run_id}: {kept} round(s) kept from {planned.out_dir / 'results.json'}.")


def measure_with_progress(planned: Planned) -> RunResult:
    bar, update = progress_bar("starting", total=len(planned.choice.cases) * planned.settings.rounds)
    try:
        with bar:
            return measure(planned, planned.choice.cases, update)
    except KeyboardInterrupt:
        if (planned.out_dir / "results.json").exists():
            note(f"partial results (the rounds finished so far): {planned.out_dir / 'results.json'}")
        raise


def print_run(outcome: RunOutcome, fmt: OutputFormat) -> None:
    result, comparison = outcome.result, outcome.comparison
    # one JSON document: the results, with the comparison (as comparison.json holds it) when there is a baseline
    emit(fmt, outcome.json_document, lambda: run_table(result))
    print_decisions(result, outcome.decisions, fmt)
    if comparison is not None:
        print_comparison(comparison, result, fmt)
        print_unsettled_hint(outcome.unsettled, outcome.unsettled_remedy, comparison)
    else:
        note(verdict_line(None, result))
    note(f"results: {outcome.out_dir / 'results.json'}\nreport:  {outcome.out_dir / 'report.html'}")


@app.command()
def env(fmt: FmtOpt = OutputFormat.table, config: ConfigOpt = None) -> None:
    """Show the runner fingerprint, and the runner class in effect (it names the stored baseline)."""

    def body() -> int:
        fp = fingerprint()
        out, _ = consoles()
        derived = runner_name(fp)
        runner = project_settings(config).runner_class(None, fp)  # $PERFCI_RUNNER or the configuration, if set
        if fmt is OutputFormat.json:
            out.print_json(json.dumps({**fp, "runner": runner, "runner_derived": derived}))
            return 0
        set_apart = f" (set by $PERFCI_RUNNER or the configuration; this machine's own: {derived})"
        out.print(f"runner class: {runner}{set_apart if runner != derived else ''}", highlight=False, markup=False)
        for key, value in fp.items():
            if key == "gpus":
                if not value:
                    out.print(f"gpus: none ({fp.get('gpu_note') or 'no NVIDIA GPU'})", highlight=False, markup=False)
                for g in value:
                    out.print(f"gpu {g['index']}: {plain_value(g)}", highlight=False, markup=False)
            elif key != "gpu_note":
                out.print(f"{key}: {plain_value(value)}", highlight=False, markup=False)
        return 0

    guard(body)


@app.command("list")
def list_cases(
    paths: Paths = None, patterns: PatternOpt = None, suites: SuiteOpt = None, devices: DeviceOpt = None,
    config: ConfigOpt = None,
    show_all: Annotated[
        bool, typer.Option("--all", help="Also show the cases left out (skip predicate, device), with the reason.")
    ] = False,
    fmt: FmtOpt = OutputFormat.table, shard: ShardOpt = None, durations: DurationsOpt = None,
) -> None:  # fmt: skip
    """List every case that would run, after the filters (with --shard: the cases of that shard, and the split)."""

    def body() -> int:
        out, err = consoles()
        choice = select_cases(project_settings(config), paths, patterns, suites, devices)
        selected = bool(choice.cases)
        split_with = sharded(shard, durations)
        if split_with is not None and selected:
            choice = shard_choice(choice, split_with)
        left_out = choice.left_out if show_all else []
        if fmt is OutputFormat.json:
            rows = [case_row(s, None) for s in choice.cases] + [case_row(s, r) for s, r in left_out]
            out.print_json(json.dumps(rows))
            return 0 if selected else 2
        for spec in choice.cases:  # soft-wrapped: the terminal folds a long id, and a copy of it comes whole
            out.print(spec.id, highlight=False, markup=False, soft_wrap=True)
        for spec, reason in left_out:
            out.print(f"{spec.id}  (left out: {reason})", highlight=False, markup=False, soft_wrap=True)
        if not selected:
            err.print(f"{nothing_selected(patterns, suites, devices)}.", highlight=False, markup=False)
            if hint := pytest_expression_hint(patterns):
                err.print(f"hint: {hint}", highlight=False, markup=False, soft_wrap=whole_lines(err))
        if not show_all:
            note_other_devices(choice)
        return 0 if selected else 2  # as `perfci run` of the same selection

    guard(body)


def shard_choice(choice: CaseChoice, shard: Shard) -> CaseChoice:
    """`perfci list --shard I/N`: the shard's cases; the split (cases, and seconds with --durations) on stderr.
    The others of the split are left out, with their shard as the reason (shown by --all)."""
    shards = split((s.id for s in choice.cases), shard.count, dict(shard.durations) or None)
    note(f"shard {shard}: {split_text(shards, shard.count, dict(shard.durations) or None)}.")
    held = [s for s in choice.cases if shards[s.id] == shard.index]
    others = [(s, f"shard {shards[s.id]}/{shard.count}") for s in choice.cases if shards[s.id] != shard.index]
    return CaseChoice(held, [*choice.left_out, *others], choice.other_devices, choice.deselected)
