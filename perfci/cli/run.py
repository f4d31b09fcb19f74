"""`perfci run`, `perfci list`, `perfci env`.

Which cases run: the PATHS given, else the configuration's `paths`, plus the built-in suites named by
`--suite` (else the configuration's `suites`); the built-in default suite when none of these name anything.
Then the filters: `-k` (substring, glob or `re:` on the case id, see perfci.patterns), `--suite`, `--device`
(default: the configuration's `devices`, else the devices present on this runner; cases for other devices are
counted on stderr). Options given on the command line beat the configuration, which beats the defaults.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from perfci.api.settings import load_project_config
from perfci.cli.app import (
    DbOpt,
    HistoryNoiseOpt,
    OutputFormat,
    app,
    consoles,
    emit,
    guard,
    noise_lookup,
    parse_size,
    print_comparison,
    with_noise_note,
    worker_cpus,
    writable_folder,
)
from perfci.cli.compare import print_unsettled_hint, stored_gate
from perfci.compare.decide import DecisionSettings, compare_runs
from perfci.compare.gate import ExitCode, gate
from perfci.config import Config
from perfci.engine.runner import Runner, RunSettings
from perfci.errors import UsageError, WorkloadDefinitionError
from perfci.model import CaseSpec, RunResult
from perfci.patterns import case_pattern
from perfci.profilers.fingerprint import fingerprint, runner_name
from perfci.profilers.nvml import gpu_inventory
from perfci.profilers.timing import TimingSettings
from perfci.reports.html import write_html
from perfci.reports.markdown import write_markdown
from perfci.reports.terminal import run_table, verdict_line
from perfci.schema import load_results, run_to_dict
from perfci.workloads.discovery import BUILTIN_SUITES, all_cases_from_sources
from perfci.workloads.selection import Selection, plan_sources, unknown_suites

PatternOpt = Annotated[
    list[str] | None,
    typer.Option(
        "-k",
        help="Keep cases whose id contains this text, or matches it as a glob when it has * or ? "
        "([ and ] are literal), or as a regular expression when it starts with 're:'. Repeatable (any matches).",
    ),
]
SuiteOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--suite", help=f"Suite to run (built-in: {', '.join(BUILTIN_SUITES)}; or a suite= of yours). Repeatable."
    ),
]
DeviceOpt = Annotated[
    list[str] | None,
    typer.Option("--device", help="Device to run on (cpu, cuda, cuda:1). Repeatable. Default: the ones present."),
]
CpusOpt = Annotated[
    str | None,
    typer.Option("--cpus", help="Pin the workers to these CPUs, e.g. 3 or 2-3 or 0,4-7 [default: not pinned]."),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="Configuration file (default: perfci.toml or [tool.perfci] in pyproject.toml)."),
]


def default_out() -> Path:
    return Path(".perfci") / "runs" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def runner_class(explicit: str | None, fp: dict[str, Any]) -> str:
    return explicit or os.environ.get("PERFCI_RUNNER") or runner_name(fp)


def present_devices() -> tuple[str, ...]:
    """cpu, and cuda when NVML sees an NVIDIA GPU (cheap: does not import torch)."""
    return ("cpu", "cuda") if gpu_inventory().gpus else ("cpu",)


@dataclass(frozen=True)
class CaseChoice:
    """The cases to run, and the ones discovered but left out (with the reason), for `list --all`."""

    cases: list[CaseSpec]
    left_out: list[tuple[CaseSpec, str]]
    other_devices: int  # cases dropped only because their device is not selected


def select_cases(
    paths: list[Path] | None,
    cfg: Config | None = None,
    patterns: list[str] | None = None,
    suites: list[str] | None = None,
    devices: list[str] | None = None,
) -> CaseChoice:
    cfg = cfg or Config()
    wanted_suites = tuple(suites or cfg.suites)
    try:
        compiled = tuple(case_pattern(p) for p in patterns or ())
    except ValueError as exc:
        raise UsageError(f"-k: {exc}.") from None
    found = all_cases_from_sources(plan_sources(paths or list(cfg.paths), wanted_suites))
    ids: dict[str, CaseSpec] = {}
    for spec, _ in found:
        if spec.id in ids and ids[spec.id].source != spec.source:
            raise WorkloadDefinitionError(
                f"case {spec.id} is defined twice: in {ids[spec.id].source} and in {spec.source}.",
                hint="rename one workload or file",
            )
        ids[spec.id] = spec
    unknown = unknown_suites([s for s, _ in found], wanted_suites)
    if unknown:
        mine = sorted({s.suite for s, _ in found} - set(BUILTIN_SUITES))
        raise UsageError(
            f"unknown suite {unknown[0]!r}.",
            hint=f"built-in suites: {', '.join(BUILTIN_SUITES)}" + (f"; yours: {', '.join(mine)}" if mine else ""),
        )
    explicit_devices = tuple(devices or cfg.devices)
    by_rest = Selection(patterns=compiled, suites=wanted_suites)
    by_device = Selection(devices=explicit_devices or present_devices())
    chosen, left_out, other = [], [], 0
    for spec, reason in found:
        if reason is not None:
            left_out.append((spec, reason))
        elif not by_rest.keeps(spec):
            continue
        elif not by_device.keeps(spec):
            other += 1
            left_out.append((spec, f"device {spec.device} not selected"))
        else:
            chosen.append(spec)
    return CaseChoice(chosen, left_out, 0 if explicit_devices else other)


def note_other_devices(choice: CaseChoice) -> None:
    if choice.other_devices:
        _, err = consoles()
        devices = sorted({s.device for s, r in choice.left_out if r.startswith("device ")})
        err.print(
            f"note: {choice.other_devices} case(s) for {', '.join(devices)} left out: no such device on this runner "
            f"(pass --device {devices[0].split(':')[0]} to include them).",
            highlight=False,
            soft_wrap=True,
        )


def project_config(path: Path | None) -> Config:
    return load_project_config(path)


def timing_settings(cfg: Config, budget: float | None, speed_reference: bool | None = None) -> TimingSettings:
    timing = TimingSettings(speed_reference=bool(_first(speed_reference, cfg.speed_reference, False)))
    budget = budget if budget is not None else cfg.budget_s
    return timing if budget is None else replace(timing, budget_s=budget)


@app.command()
def run(
    paths: Annotated[list[Path] | None, typer.Argument(help="Workload files or folders.")] = None,
    patterns: PatternOpt = None,
    suites: SuiteOpt = None,
    devices: DeviceOpt = None,
    config: ConfigOpt = None,
    out: Annotated[Path | None, typer.Option(help="Output folder (default .perfci/runs/<timestamp>).")] = None,
    rounds: Annotated[int | None, typer.Option(min=1, help="Worker processes per case [default: 5].")] = None,
    threads: Annotated[
        int | None, typer.Option(min=0, help="torch/ORT threads per worker (0: the library's default) [default: 1].")
    ] = None,
    cpus: CpusOpt = None,
    seed: Annotated[int, typer.Option(help="Seed for inputs and round order.")] = 0,
    timeout: Annotated[float | None, typer.Option(help="Per-case time-out in seconds [default: 120].")] = None,
    budget: Annotated[
        float | None, typer.Option(help="Sampling time budget per case and round, seconds [default: 0.4].")
    ] = None,
    memory_limit: Annotated[
        str | None,
        typer.Option(envvar="PERFCI_MEMORY_LIMIT", help="Worker memory limit, e.g. 8GiB (default: half of RAM)."),
    ] = None,
    speed_reference: Annotated[
        bool | None,
        typer.Option(
            "--speed-reference/--no-speed-reference",
            help="Time a fixed torch matmul before each sample of CPU torch cases and report latency.vs_reference "
            "(steadier across jobs on a shared CPU; docs/measurement.md) [default: off].",
        ),
    ] = None,
    baseline: Annotated[Path | None, typer.Option(help="Results file to compare with.")] = None,
    runner: Annotated[str | None, typer.Option(help="Runner class (names baselines/<runner>.json).")] = None,
    threshold: Annotated[
        float | None,
        typer.Option(help="Practical threshold for timed metrics (0.05 = 5%; default: configuration, then built-in)."),
    ] = None,
    confirm: Annotated[
        bool, typer.Option("--confirm", help="Re-measure flagged cases by A/B against the baseline's commit.")
    ] = False,
    history_noise: HistoryNoiseOpt = None,
    db: DbOpt = None,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Report only; always exit 0.")] = False,
    fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.table,
) -> None:
    """Discover and run workloads, write results.json and report.html, compare with the baseline."""

    def body() -> int:
        cfg = project_config(config)
        choice = select_cases(paths, cfg, patterns, suites, devices)
        note_other_devices(choice)
        specs = choice.cases
        if not specs:
            raise UsageError(
                "no cases to run: no workloads found, or the filters (-k, --suite, --device) left none.",
                hint="see what would run with 'perfci list' (add --all for the cases left out)",
            )
        out_dir = out or default_out()
        settings = RunSettings(
            rounds=rounds or cfg.rounds or 5,
            seed=seed,
            threads=_first(threads, cfg.threads, 1),
            cpu_affinity=worker_cpus(cpus, cfg),
            case_timeout_s=_first(timeout, cfg.case_timeout_s, 120.0),
            timing=timing_settings(cfg, budget, speed_reference),
        )
        if memory_limit:
            settings = replace(settings, memory_limit_bytes=parse_size(memory_limit))
        # the baseline is read (and checked) before measuring: a bad one should not cost a whole run first
        runner_name = runner_class(runner or cfg.runner, fingerprint())
        base_path = baseline or Path("baselines") / f"{runner_name}.json"
        lookup = noise_lookup(history_noise, cfg, db, runner_name)  # opens (and checks) the store before measuring
        if baseline is not None and not base_path.exists():
            raise UsageError(f"{baseline}: baseline file not found.")
        baseline_run = load_results(base_path) if base_path.exists() else None
        writable_folder(out_dir, "--out")  # after the inputs are checked, before measuring
        try:
            result = run_with_progress(Runner(settings, out_dir), specs)
        except KeyboardInterrupt:
            if (out_dir / "results.json").exists():
                partial = f"partial results (the rounds finished so far): {out_dir / 'results.json'}"
                consoles()[1].print(partial, highlight=False, soft_wrap=True)
            raise
        comparison = None
        if baseline_run is not None:
            decision = DecisionSettings(threshold=threshold, thresholds=dict(cfg.thresholds), job_noise_lookup=lookup)
            compared = compare_runs(baseline_run, result, decision, (str(base_path), str(out_dir)))
            comparison = with_noise_note(compared, lookup)
            comparison = stored_gate(comparison, baseline_run, confirm, paths, cfg, suites, out_dir, settings, decision)
        write_html(out_dir / "report.html", result, comparison, baseline_run)
        write_markdown(out_dir / "summary.md", result, comparison, baseline_run)
        emit(fmt, lambda: run_to_dict(result), lambda: run_table(result))
        _, err = consoles()
        if comparison is not None:
            print_comparison(comparison, result, fmt)
            if not confirm:
                remedy = "Re-run with --confirm to re-measure them by A/B against the baseline's commit."
                print_unsettled_hint(comparison, decision, remedy)
        else:
            err.print(verdict_line(None, result), highlight=False)
        err.print(f"results: {out_dir / 'results.json'}\nreport:  {out_dir / 'report.html'}", highlight=False)
        code = gate(comparison, result)
        return ExitCode.OK if exit_zero else code

    guard(body)


def _first(*values: Any) -> Any:
    return next(v for v in values if v is not None)


def run_with_progress(runner: Runner, specs: list[CaseSpec]) -> RunResult:
    _, err = consoles()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task("starting", total=len(specs) * runner.settings.rounds)

        def update(message: str, done: int, total: int) -> None:
            progress.update(task, description=message[:60], completed=done, total=total)

        runner.progress = update
        return runner.run(specs)


@app.command()
def env(fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.table) -> None:
    """Show the runner fingerprint."""

    def body() -> int:
        fp = fingerprint()
        out, _ = consoles()
        if fmt is OutputFormat.json:
            out.print_json(json.dumps({**fp, "runner": runner_name(fp)}))
            return 0
        out.print(f"runner class: {runner_name(fp)}", highlight=False)
        for key, value in fp.items():
            if key == "gpus":
                if not value:
                    out.print(f"gpus: none ({fp.get('gpu_note') or 'no NVIDIA GPU'})", highlight=False)
                for g in value:
                    out.print(f"gpu {g['index']}: {g}", highlight=False)
            elif key != "gpu_note":
                out.print(f"{key}: {value}", highlight=False)
        return 0

    guard(body)


@app.command("list")
def list_cases(
    paths: Annotated[list[Path] | None, typer.Argument(help="Workload files or folders.")] = None,
    patterns: PatternOpt = None,
    suites: SuiteOpt = None,
    devices: DeviceOpt = None,
    config: ConfigOpt = None,
    show_all: Annotated[
        bool, typer.Option("--all", help="Also show the cases left out (skip predicate, device), with the reason.")
    ] = False,
    fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.table,
) -> None:
    """List every case that would run, after the filters."""

    def body() -> int:
        out, err = consoles()
        choice = select_cases(paths, project_config(config), patterns, suites, devices)
        left_out = choice.left_out if show_all else []
        if fmt is OutputFormat.json:
            rows = [_case_row(s, None) for s in choice.cases] + [_case_row(s, r) for s, r in left_out]
            out.print_json(json.dumps(rows))
            return 0
        for spec in choice.cases:
            out.print(spec.id, highlight=False, markup=False)
        for spec, reason in left_out:
            out.print(f"{spec.id}  (left out: {reason})", highlight=False, markup=False)
        if not choice.cases:
            err.print("no cases match.", highlight=False)
        if not show_all:
            note_other_devices(choice)
        return 0

    guard(body)


def _case_row(spec: CaseSpec, reason: str | None) -> dict[str, Any]:
    return {
        "id": spec.id,
        "workload": spec.workload,
        "suite": spec.suite,
        "params": spec.params,
        "device": spec.device,
        "tags": list(spec.tags),
        "source": spec.source,
        "left_out": reason,
    }
