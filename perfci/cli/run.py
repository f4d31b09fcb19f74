"""`perfci run`, `perfci list`, `perfci env`."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from perfci.cli.app import OutputFormat, app, consoles, guard, parse_size, print_comparison
from perfci.compare.decide import DecisionSettings, compare_runs
from perfci.compare.gate import ExitCode, gate
from perfci.errors import UsageError
from perfci.model import CaseSpec, RunResult
from perfci.profilers.fingerprint import fingerprint, runner_name
from perfci.reports.html import write_html
from perfci.reports.terminal import run_table, verdict_line
from perfci.runner import Runner, RunSettings
from perfci.schema import load_results, run_to_dict
from perfci.workloads.discovery import builtin_source, cases_from_sources, expand_paths


def default_out() -> Path:
    return Path(".perfci") / "runs" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def runner_class(explicit: str | None, fp: dict[str, Any]) -> str:
    return explicit or os.environ.get("PERFCI_RUNNER") or runner_name(fp)


def select_cases(paths: list[Path] | None) -> list[CaseSpec]:
    sources = expand_paths(paths) if paths else [builtin_source("default")]
    return cases_from_sources(sources)


@app.command()
def run(
    paths: Annotated[list[Path] | None, typer.Argument(help="Workload files or folders.")] = None,
    out: Annotated[Path | None, typer.Option(help="Output folder (default .perfci/runs/<timestamp>).")] = None,
    rounds: Annotated[int, typer.Option(min=1, help="Worker processes per case.")] = 5,
    threads: Annotated[int, typer.Option(min=0, help="torch threads per worker (0: torch's default).")] = 1,
    seed: Annotated[int, typer.Option(help="Seed for inputs and round order.")] = 0,
    timeout: Annotated[float, typer.Option(help="Per-case time-out in seconds.")] = 120.0,
    memory_limit: Annotated[
        str | None,
        typer.Option(envvar="PERFCI_MEMORY_LIMIT", help="Worker memory limit, e.g. 8GiB (default: half of RAM)."),
    ] = None,
    baseline: Annotated[Path | None, typer.Option(help="Results file to compare with.")] = None,
    runner: Annotated[str | None, typer.Option(help="Runner class (names baselines/<runner>.json).")] = None,
    threshold: Annotated[float, typer.Option(help="Practical threshold (0.05 = 5%).")] = 0.05,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Report only; always exit 0.")] = False,
    fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.table,
) -> None:
    """Discover and run workloads, write results.json and report.html, compare with the baseline."""

    def body() -> int:
        specs = select_cases(paths)
        if not specs:
            raise UsageError("no workloads found in the given paths.", hint="decorate functions with @perfci.workload")
        out_dir = out or default_out()
        settings = RunSettings(rounds=rounds, seed=seed, threads=threads, case_timeout_s=timeout)
        if memory_limit:
            settings = replace(settings, memory_limit_bytes=parse_size(memory_limit))
        result = run_with_progress(Runner(settings, out_dir), specs)
        base_path = baseline or Path("baselines") / f"{runner_class(runner, result.fingerprint)}.json"
        comparison = None
        if base_path.exists():
            comparison = compare_runs(
                load_results(base_path), result, DecisionSettings(threshold=threshold), (str(base_path), str(out_dir))
            )
        elif baseline is not None:
            raise UsageError(f"{baseline}: baseline file not found.")
        write_html(out_dir / "report.html", result, comparison)
        o, err = consoles()
        if fmt is OutputFormat.json:
            o.print_json(json.dumps(run_to_dict(result)))
        else:
            o.print(run_table(result))
        if comparison is not None:
            print_comparison(comparison, result, fmt)
        else:
            err.print(verdict_line(None, result), highlight=False)
        err.print(f"results: {out_dir / 'results.json'}\nreport:  {out_dir / 'report.html'}", highlight=False)
        code = gate(comparison, result)
        return ExitCode.OK if exit_zero else code

    guard(body)


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
) -> None:
    """List every case that would run."""

    def body() -> int:
        out, _ = consoles()
        for spec in select_cases(paths):
            out.print(spec.id, highlight=False, markup=False)
        return 0

    guard(body)
