"""Command-line interface (typer). The only module that reads argv/env, prints and exits."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from perfci.compare.decide import DecisionSettings, compare_runs
from perfci.compare.gate import ExitCode, gate
from perfci.errors import PerfciError, UsageError
from perfci.model import Comparison, RunResult
from perfci.profilers.fingerprint import fingerprint, runner_name
from perfci.reports.html import write_html
from perfci.reports.terminal import comparison_table, run_table, verdict_line
from perfci.runner import Runner, RunSettings
from perfci.schema import load_results, run_to_dict
from perfci.workloads.discovery import builtin_source, cases_from_sources, expand_paths

app = typer.Typer(add_completion=False, no_args_is_help=True, help="perfci: performance-regression gate.")
baseline_app = typer.Typer(help="Manage stored baselines.", no_args_is_help=True)
history_app = typer.Typer(help="History store.", no_args_is_help=True)
import_app = typer.Typer(help="Import results from other tools.", no_args_is_help=True)
app.add_typer(baseline_app, name="baseline")
app.add_typer(history_app, name="history")
app.add_typer(import_app, name="import")


class OutputFormat(StrEnum):
    table = "table"
    json = "json"


class _State:
    debug = False


def _consoles() -> tuple[Console, Console]:
    no_color = "NO_COLOR" in os.environ
    out = Console(no_color=no_color, soft_wrap=False)
    if not out.is_terminal:  # piped or captured: do not squeeze tables into 80 columns
        out = Console(no_color=no_color, soft_wrap=False, width=200)
    return out, Console(stderr=True, no_color=no_color)


def _fail(exc: PerfciError) -> NoReturn:
    _, err = _consoles()
    err.print(f"[bold red]error:[/] {exc.message}", highlight=False, markup=True, soft_wrap=True)
    if exc.hint:
        err.print(f"hint: {exc.hint}", highlight=False, soft_wrap=True)
    raise typer.Exit(exc.exit_code)


def _guard(fn: Callable[[], int]) -> NoReturn:
    """Run a command body; map perfci errors to one line and exit code, tracebacks only with --debug."""
    try:
        code = fn()
    except PerfciError as exc:
        if _State.debug:
            raise
        _fail(exc)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    raise typer.Exit(code)


@app.callback()
def main(debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False) -> None:
    _State.debug = debug


_SIZE_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 2**10, "m": 10**6, "mb": 10**6, "mib": 2**20,
               "g": 10**9, "gb": 10**9, "gib": 2**30, "t": 10**12, "tb": 10**12, "tib": 2**40}


def parse_size(text: str) -> int:
    """`8GiB`, `512MB`, `1000000` -> bytes."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _SIZE_UNITS:
        raise UsageError(f"cannot read {text!r} as a memory size.", hint="write it like 8GiB, 512MiB or 2GB")
    return int(float(match.group(1)) * _SIZE_UNITS[unit])


def _default_out() -> Path:
    return Path(".perfci") / "runs" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def _runner_class(explicit: str | None, fp: dict[str, Any]) -> str:
    return explicit or os.environ.get("PERFCI_RUNNER") or runner_name(fp)


def _print_comparison(comparison: Comparison, run: RunResult | None, fmt: OutputFormat) -> None:
    out, err = _consoles()
    if fmt is OutputFormat.json:
        rows = [{**r.__dict__, "verdict": r.verdict.value} for r in comparison.rows]
        out.print_json(json.dumps({"verdict": verdict_line(comparison, run), "rows": rows}))
    else:
        out.print(comparison_table(comparison))
    err.print(verdict_line(comparison, run), highlight=False)


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
        sources = expand_paths(paths) if paths else [builtin_source("default")]
        specs = cases_from_sources(sources)
        if not specs:
            raise UsageError("no workloads found in the given paths.", hint="decorate functions with @perfci.workload")
        out_dir = out or _default_out()
        settings = RunSettings(rounds=rounds, seed=seed, threads=threads, case_timeout_s=timeout)
        if memory_limit:
            settings = replace(settings, memory_limit_bytes=parse_size(memory_limit))
        result = _run_with_progress(Runner(settings, out_dir), specs)
        base_path = baseline or Path("baselines") / f"{_runner_class(runner, result.fingerprint)}.json"
        comparison = None
        if base_path.exists():
            comparison = compare_runs(load_results(base_path), result, DecisionSettings(threshold=threshold),
                                      (str(base_path), str(out_dir)))
        elif baseline is not None:
            raise UsageError(f"{baseline}: baseline file not found.")
        write_html(out_dir / "report.html", result, comparison)
        o, err = _consoles()
        if fmt is OutputFormat.json:
            o.print_json(json.dumps(run_to_dict(result)))
        else:
            o.print(run_table(result))
        if comparison is not None:
            _print_comparison(comparison, result, fmt)
        else:
            err.print(verdict_line(None, result), highlight=False)
        err.print(f"results: {out_dir / 'results.json'}\nreport:  {out_dir / 'report.html'}", highlight=False)
        code = gate(comparison, result)
        return ExitCode.OK if exit_zero else code

    _guard(body)


def _run_with_progress(runner: Runner, specs: list[Any]) -> RunResult:
    _, err = _consoles()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task("starting", total=len(specs) * runner.settings.rounds)

        def update(message: str, done: int, total: int) -> None:
            progress.update(task, description=message[:60], completed=done, total=total)

        runner.progress = update
        return runner.run(specs)


@app.command()
def compare(
    baseline: Annotated[Path, typer.Argument(help="Baseline results file.")],
    candidate: Annotated[Path, typer.Argument(help="Candidate results file.")],
    threshold: Annotated[float, typer.Option(help="Practical threshold (0.05 = 5%).")] = 0.05,
    html: Annotated[Path | None, typer.Option(help="Also write an HTML report here.")] = None,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Report only; always exit 0.")] = False,
    fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.table,
) -> None:
    """Compare two results files; exit 1 on a regression."""

    def body() -> int:
        base, cand = load_results(baseline), load_results(candidate)
        comparison = compare_runs(base, cand, DecisionSettings(threshold=threshold), (str(baseline), str(candidate)))
        _print_comparison(comparison, cand, fmt)
        if html is not None:
            write_html(html, cand, comparison)
        code = gate(comparison)
        return ExitCode.OK if exit_zero else code

    _guard(body)


@app.command()
def env(fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.table) -> None:
    """Show the runner fingerprint."""

    def body() -> int:
        fp = fingerprint()
        out, _ = _consoles()
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

    _guard(body)


@app.command("list")
def list_cases(
    paths: Annotated[list[Path] | None, typer.Argument(help="Workload files or folders.")] = None,
) -> None:
    """List every case that would run."""

    def body() -> int:
        sources = expand_paths(paths) if paths else [builtin_source("default")]
        out, _ = _consoles()
        for spec in cases_from_sources(sources):
            out.print(spec.id, highlight=False, markup=False)
        return 0

    _guard(body)


def _not_yet(name: str) -> NoReturn:
    _fail(UsageError(f"'perfci {name}' is not implemented yet in this version."))


@app.command()
def ab(base_rev: str, head_rev: Annotated[str, typer.Argument()] = "HEAD") -> None:
    """Same-machine A/B of two git revisions (not implemented yet)."""
    _not_yet("ab")


@app.command()
def report(results: list[Path]) -> None:
    """Render a results or comparison file again (not implemented yet)."""
    _not_yet("report")


@app.command()
def trend() -> None:
    """Trend report from the history store (not implemented yet)."""
    _not_yet("trend")


@baseline_app.command("update")
def baseline_update() -> None:
    """Accept current results as the baseline (not implemented yet)."""
    _not_yet("baseline update")


@baseline_app.command("show")
def baseline_show() -> None:
    """Show the stored baseline (not implemented yet)."""
    _not_yet("baseline show")


@history_app.command("ingest")
def history_ingest() -> None:
    """Add results to the history store (not implemented yet)."""
    _not_yet("history ingest")


@import_app.command("pytest-benchmark")
def import_pytest_benchmark(file: Path) -> None:
    """Import a pytest-benchmark JSON file (not implemented yet)."""
    _not_yet("import pytest-benchmark")


def entrypoint() -> None:
    app(prog_name="perfci")


if __name__ == "__main__":
    sys.exit(entrypoint())  # type: ignore[func-returns-value]
