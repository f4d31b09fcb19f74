"""The command-line options the commands share, each declared once and made from its row of the options table
(perfci/options.py): flag, help text with its default, and bounds. A command module takes them from here."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from perfci.cli.app import OutputFormat
from perfci.fractions import parse_fraction
from perfci.options import (
    AB_BUDGET,
    BUILD,
    CASE_TIMEOUT,
    CPU_FIRST_LOOK,
    CPUS,
    DB,
    DEVICES,
    EXTRA,
    FAIL_ON,
    GPU_MODE,
    HISTORY_NOISE,
    JOB_NOISE,
    LOOKS,
    MAX_MEMORY,
    MEMORY_LIMIT,
    PAIRS,
    PAIRS_AT_ONCE,
    PATHS,
    PYTEST,
    RANK,
    ROUND_TIME,
    ROUNDS,
    RUNNER,
    SEED,
    SUITES,
    THREADS,
    THRESHOLD,
    Option,
)


def fraction_option(text: str) -> float:
    """A fraction option's value: `3%` or `0.03` (perfci/fractions.py); a bare number above 1 is refused."""
    try:
        return parse_fraction(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def option(row: Option, *names: str, help: str | None = None, hidden: bool = False) -> Any:
    """A typer option made from a row of the options table: its flag (or `names`), its help text with the
    default, and, for whole numbers, its bounds (the API checks every bound again, whatever the source)."""
    bounded = row.kind == "int"
    return typer.Option(
        *(names or ((row.flag,) if row.flag else ())),
        help=f"{help}." if help else row.help_text(),
        show_default=False,
        min=row.low if bounded and row.low is not None else None,
        max=row.high if bounded and row.high is not None else None,
        parser=fraction_option if row.kind == "fraction" else None,
        hidden=hidden,
    )


DEPRECATED_BUDGET = (
    "warning: `perfci run --budget` is deprecated and will be removed in the next release: it is the sampling time "
    "per case and round, now --round-time (--budget means the time budget of a whole A/B in `ab` and `ci`)."
)

RoundsOpt = Annotated[int | None, option(ROUNDS)]
ThreadsOpt = Annotated[int | None, option(THREADS)]
TimeoutOpt = Annotated[float | None, option(CASE_TIMEOUT)]
RoundTimeOpt = Annotated[float | None, option(ROUND_TIME, "--round-time", "--sample-budget")]
DeprecatedBudgetOpt = Annotated[
    float | None, option(ROUND_TIME, "--budget", help="Deprecated name of --round-time", hidden=True)
]
SeedOpt = Annotated[int, option(SEED)]
CpusOpt = Annotated[str | None, option(CPUS)]
ABCpusOpt = Annotated[
    str | None, option(CPUS, help="CPUs both workers of a pair run on, e.g. 2-3 [default: the last --threads]")
]
DeviceOpt = Annotated[list[str] | None, option(DEVICES)]
ThresholdOpt = Annotated[float | None, option(THRESHOLD)]
JobNoiseOpt = Annotated[float | None, option(JOB_NOISE)]
FailOnOpt = Annotated[str | None, option(FAIL_ON)]
RunnerOpt = Annotated[str | None, option(RUNNER)]
DbOpt = Annotated[str | None, option(DB)]


def unused_db_note(results: str) -> str:
    """`--db` given where nothing reads the store (no --history-noise): said, as a run is never stored by it."""
    return (
        "note: --db is read only for --history-noise, which is off: nothing was read from the history store and "
        f"nothing stored in it. To keep this run in the history: perfci history ingest {results} --db URL"
    )


HistoryNoiseOpt = Annotated[bool | None, option(HISTORY_NOISE)]
GpuModeOpt = Annotated[str | None, option(GPU_MODE)]
BuildOpt = Annotated[str | None, option(BUILD)]
AbBudgetOpt = Annotated[float, option(AB_BUDGET)]
PairsOpt = Annotated[int | None, option(PAIRS)]
ExtraOpt = Annotated[int, option(EXTRA)]
PairsAtOnceOpt = Annotated[int, option(PAIRS_AT_ONCE)]
LooksOpt = Annotated[int, option(LOOKS)]
PathOpt = Annotated[list[Path] | None, option(PATHS, "--path", help="Workload file or folder (repeatable)")]
SuiteOpt = Annotated[list[str] | None, option(SUITES, help="Suite, built-in or a suite= of yours (repeatable)")]
PytestOpt = Annotated[list[Path] | None, option(PYTEST)]
PatternOpt = Annotated[
    list[str] | None,
    typer.Option(
        "-k",
        help="Keep cases whose id contains this text, or matches it as a glob when it has * or ? "
        "([ and ] are literal), or as a regular expression when it starts with 're:'. Repeatable (any matches).",
    ),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="Configuration file (default: perfci.toml or [tool.perfci] in pyproject.toml)."),
]
FmtOpt = Annotated[OutputFormat, typer.Option("--format")]
ExitZeroOpt = Annotated[bool, typer.Option("--exit-zero", help="Report only; always exit 0.")]
BasePythonOpt = Annotated[
    Path | None,
    typer.Option("--base-python", help="Interpreter or virtual environment folder of the base side's workers."),
]
HeadPythonOpt = Annotated[
    Path | None,
    typer.Option("--head-python", help="Interpreter or virtual environment folder of the head side's workers."),
]


def planned_pairs(pairs: int | None, extra: int, looks: int) -> int:
    """The pairs an A/B plans at most, for its progress line: the first look (its default when not given: the
    larger, CPU one) and `extra` pairs in each further look."""

    return (pairs or CPU_FIRST_LOOK) + extra * (looks - 1)


RankOpt = Annotated[str | None, option(RANK)]
MaxMemoryOpt = Annotated[str | None, option(MAX_MEMORY)]
MemoryOpt = Annotated[str | None, option(MEMORY_LIMIT)]
