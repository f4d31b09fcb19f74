"""Shared CLI machinery: the typer app, consoles, error mapping. Command modules register on `app`."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
import typer.completion
from rich.console import Console, RenderableType
from rich.markup import escape
from typer.core import TyperGroup

try:  # typer registers its shells' completion classes only with add_completion=True (a private module: guarded)
    from typer._completion_classes import completion_init
except ImportError:  # another typer: the flags below still print and install scripts; tab completion may not work
    completion_init = None  # type: ignore[assignment]

from perfci.api.settings import Settings, load_project_config
from perfci.api.shards import Shard, parse_shard
from perfci.cli.exits import INTERRUPTED_EXIT, command_guard
from perfci.cli.progress import PlainProgress
from perfci.engine.progress import ProgressEvent, RoundStarted
from perfci.errors import InfrastructureError, PerfciError, UsageError
from perfci.format.model import Comparison, RunResult
from perfci.reports.case_table import LOG_WIDTH
from perfci.reports.decision_lines import text_lines
from perfci.reports.decisions import DecisionView
from perfci.reports.terminal import comparison_table, verdict_line

if TYPE_CHECKING:
    from perfci.engine.progress import ProgressFn

SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")  # the shells typer writes a completion script for
COMPLETION_FLAGS = ("--install-completion", "--show-completion")


def with_current_shell(args: list[str]) -> list[str]:
    """`args` with "" (the current shell) after a completion flag that names no shell. typer's own flags took no
    value, so `perfci --show-completion zsh` printed the script of the shell it ran in (bash) and ignored `zsh`;
    perfci's take the shell, and alone still mean the current one. Only the options before the command are read."""
    for i, arg in enumerate(args):
        if not arg.startswith("-"):
            break
        if arg in COMPLETION_FLAGS and (i + 1 == len(args) or args[i + 1].startswith("-")):
            return [*args[: i + 1], "", *with_current_shell(args[i + 1 :])]
    return args


def shell_names(incomplete: str) -> list[str]:
    """The shells a completion flag takes that start with `incomplete` (its own completion)."""
    return [s for s in SHELLS if s.startswith(incomplete)]


class _RootGroup(TyperGroup):
    """The `perfci` command: a completion flag with no shell gets the current one (`with_current_shell`)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # ctx: typer's click Context
        return super().parse_args(ctx, args if ctx.resilient_parsing else with_current_shell(args))


def _completion(
    action: Callable[[typer.Context, typer.CallbackParam, Any], Any],
) -> Callable[[typer.Context, typer.CallbackParam, str | None], None]:
    """The callback of a completion flag: typer's `action` for the shell named, or for the current shell ("")."""

    def callback(ctx: typer.Context, param: typer.CallbackParam, value: str | None) -> None:
        if value is None or ctx.resilient_parsing:
            return
        if value and value not in SHELLS:
            raise typer.BadParameter(f"{value!r} is not a shell perfci completes in; use one of {', '.join(SHELLS)}.")
        action(ctx, param, value or True)  # True: typer detects the current shell

    return callback


def _completion_option(flag: str, action: Callable[[typer.Context, typer.CallbackParam, Any], Any], help: str) -> Any:
    """A completion flag taking the shell (`_completion`), typer's `action` behind it."""
    return typer.Option(flag, metavar="[SHELL]", autocompletion=shell_names, callback=_completion(action),
                        expose_value=False, help=help)  # fmt: skip


# rich_markup_mode=None: help text is shown as written ("[default: 5]", "[tool.perfci]" are not markup).
# add_completion=False: perfci declares --install-completion and --show-completion itself (`main`), each taking the
# shell; typer's shell completion protocol (_PERFCI_COMPLETE) is unchanged
app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="perfci: performance-regression gate.",
    add_completion=False,
    cls=_RootGroup,
)
if completion_init is not None:
    completion_init()  # the shells' completion classes, which typer registers only with add_completion=True
baseline_app = typer.Typer(rich_markup_mode=None, help="Manage stored baselines.", no_args_is_help=True)
history_app = typer.Typer(rich_markup_mode=None, help="History store.", no_args_is_help=True)
import_app = typer.Typer(rich_markup_mode=None, help="Import results from other tools.", no_args_is_help=True)
app.add_typer(baseline_app, name="baseline")
app.add_typer(history_app, name="history")
app.add_typer(import_app, name="import")


class OutputFormat(StrEnum):
    table = "table"
    json = "json"


class _State:
    debug = False


MIN_COLUMNS = 20  # a narrower COLUMNS is taken for a mistake: COLUMNS=0 printed no error at all, COLUMNS=5 cut words


def _width() -> int | None:
    """The width to print at on a terminal: None (COLUMNS, else the terminal's) unless COLUMNS is below
    MIN_COLUMNS, then 80."""
    try:
        return None if int(os.environ.get("COLUMNS", MIN_COLUMNS)) >= MIN_COLUMNS else 80
    except ValueError:
        return None  # not a number: rich ignores it


def consoles() -> tuple[Console, Console]:
    """stdout and stderr. In a log (a pipe, a file) both are LOG_WIDTH wide, so that no message, verdict or path
    is wrapped or cut whatever COLUMNS says."""
    no_color, width = "NO_COLOR" in os.environ, _width()
    out = Console(no_color=no_color, soft_wrap=False, width=width)
    if not out.is_terminal:
        out = Console(no_color=no_color, soft_wrap=False, width=LOG_WIDTH)
    err = Console(stderr=True, no_color=no_color, width=width)
    if not err.is_terminal:
        err = Console(stderr=True, no_color=no_color, width=LOG_WIDTH)
    return out, err


def whole_lines(console: Console) -> bool:
    """A diagnostic keeps each message on one line in a log (a pipe or a file, where grep finds it whole) and wraps
    at words on a terminal, which would otherwise cut a word in two at its edge."""
    return not console.is_terminal


def fail(exc: PerfciError) -> NoReturn:
    _, err = consoles()
    # the message is text, not markup: a case id such as `w[n=400]@cpu` must not be read as a style tag
    err.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False, markup=True, soft_wrap=whole_lines(err))
    if exc.hint:
        err.print(f"hint: {exc.hint}", highlight=False, markup=False, soft_wrap=whole_lines(err))
    raise typer.Exit(exc.exit_code)


_PATH_ERRNOS = {
    errno.EACCES,
    errno.EPERM,
    errno.ENOENT,
    errno.ENOTDIR,
    errno.EISDIR,
    errno.EEXIST,
    errno.EROFS,
    errno.ENAMETOOLONG,
}


def file_error(exc: OSError) -> PerfciError:
    """An OSError as one sentence: a path that cannot be used is a usage error (2); anything else (a full disk,
    an I/O error) an infrastructure failure (3)."""
    where = f"{exc.filename}: " if exc.filename else ""
    text = f"{where}{exc.strerror or exc}."
    if exc.errno in _PATH_ERRNOS:
        return UsageError(text, hint="check the path given (--out, --html, --db and the like)")
    return InfrastructureError(text)


def appendable_file(path: Path | None, option: str) -> None:
    """Check up front that a file perfci appends to at the end (the step summary, the outputs file) can be
    appended to: a folder, or a file in a missing or read-only folder, was found only after measuring,
    and the gate's own exit code was lost to exit 2."""
    if path is None:
        return
    if path.is_dir():
        raise UsageError(f"{option} {path}: cannot append to it (a folder).")
    folder = path.parent if not path.exists() else None
    if folder is not None and not folder.is_dir():
        raise UsageError(f"{option} {path}: cannot append to it ({folder} is not a folder).")
    if not os.access(path if folder is None else folder, os.W_OK):
        raise UsageError(f"{option} {path}: cannot append to it (not writable).")


def writable_folder(path: Path, option: str) -> None:
    """Check up front that an output folder can be made and written (without making it: a command refused
    later for another reason leaves nothing behind), so a run that measured for minutes does not fail at its
    first write. The nearest existing folder on the path must be a writable directory."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"{option} {path}: cannot write there ({existing} is not a folder).")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: cannot write there ({existing} is not writable).")


def guard(fn: Callable[[], int]) -> NoReturn:
    """Run a command body; map perfci errors to one line and exit code, tracebacks only with --debug.

    Ctrl-C and SIGTERM unwind the body (so worker processes are killed, not orphaned; what was measured is
    already on disk) and exit 130 with one line on stderr; a body may catch KeyboardInterrupt to say more and
    re-raise it."""
    try:
        with command_guard():
            code = fn()
    except PerfciError as exc:
        if _State.debug:
            raise
        fail(exc)
    except KeyboardInterrupt:
        consoles()[1].print("interrupted; worker processes stopped.", highlight=False)
        raise typer.Exit(INTERRUPTED_EXIT) from None
    except OSError as exc:  # a file perfci was told to read or write: one line, not a traceback
        if _State.debug:
            raise
        fail(file_error(exc))
    raise typer.Exit(code)


def _version(shown: bool) -> None:
    if shown:
        from importlib.metadata import version  # the installed distribution's, as pip knows it

        typer.echo(f"perfci {version('perfci')}")
        raise typer.Exit(0)


@app.callback()
def main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", is_eager=True, callback=_version, help="Print perfci's version and exit.")
    ] = False,
    install_completion: Annotated[
        str | None,
        _completion_option(
            "--install-completion",
            typer.completion.install_callback,
            f"Install completion for SHELL ({', '.join(SHELLS)}); without one, for the current shell.",
        ),
    ] = None,
    show_completion: Annotated[
        str | None,
        _completion_option(
            "--show-completion",
            typer.completion.show_callback,
            "Show the completion script of SHELL (without one, of the current shell), to copy it or customize "
            "the installation.",
        ),
    ] = None,
) -> None:
    _State.debug = debug


def emit(fmt: OutputFormat, data: Callable[[], Any], table: Callable[[], RenderableType]) -> None:
    """Print a command's data to stdout: as JSON with `--format json`, else as its rich table (each built only
    when it is the one shown)."""
    out, _ = consoles()
    if fmt is OutputFormat.json:
        print_json(out, data())
    else:
        out.print(table())


HIGHLIGHT_JSON_BELOW = 100_000  # characters; rich parses and highlights JSON again: seconds for a big comparison


def print_json(out: Console, data: Any) -> None:
    """`data` as JSON on stdout: highlighted on a terminal when small, else written as it is."""
    print_json_text(out, json.dumps(data, indent=2, ensure_ascii=False))


def print_json_text(out: Console, text: str) -> None:
    """JSON text on stdout: highlighted on a terminal when small, else written as it is."""
    if out.is_terminal and len(text) < HIGHLIGHT_JSON_BELOW:
        out.print_json(text)
    else:
        out.file.write(text + "\n")


DECISION_LOG_WIDTH = 120  # a CI log's decision tables: wide enough for every column, configurations never cut


def print_decisions(run: RunResult | None, view: DecisionView, fmt: OutputFormat) -> None:
    """The decision tables of the run's models and sweeps, after its table (reports/decisions.py): within the
    terminal's width, every column in a log."""
    if fmt is OutputFormat.json or run is None:
        return
    out, _ = consoles()
    width = out.width if out.is_terminal else DECISION_LOG_WIDTH
    for line in text_lines(view.tables(run), width):
        out.print(line, highlight=False, markup=False, overflow="ignore", crop=False)


def print_comparison(comparison: Comparison, run: RunResult | None, fmt: OutputFormat) -> None:
    out, err = consoles()
    if fmt is not OutputFormat.json:  # with --format json the comparison is in the run's one document
        out.print(comparison_table(comparison))
    for w in comparison.warnings:
        err.print(f"warning: {w}", highlight=False, markup=False, soft_wrap=whole_lines(err))
    err.print(verdict_line(comparison, run), highlight=False, markup=False)


def _shard(text: str | None) -> Shard | None:
    try:
        return parse_shard(text)
    except UsageError as exc:
        raise typer.BadParameter(exc.message) from None


ShardOpt = Annotated[
    Shard | None,
    typer.Option(
        "--shard",
        parser=_shard,
        metavar="I/N",
        help="Run only shard I of N: cases split by a stable hash of their id, or by time with --durations "
        "(join with 'perfci merge').",
    ),
]
DurationsOpt = Annotated[
    Path | None,
    typer.Option(
        "--durations",
        metavar="FILE",
        help="With --shard: split the cases by the time they took in this earlier results.json, so the shards end "
        "together (every job of the run must be given the same file) [default: split by count].",
    ),
]


def sharded(shard: Shard | None, durations: Path | None) -> Shard | None:
    """--shard with --durations: the shard split by the recorded durations (the file is read here)."""
    if durations is not None and shard is None:
        raise UsageError("--durations needs --shard: it says how to split the cases over the shards.")
    return shard.by_durations(durations) if shard is not None else None


def project_settings(config: Path | None = None) -> Settings:
    """The environment (read here, in the CLI, and nowhere else) and the project's configuration."""
    cfg = load_project_config(config)
    for line in cfg.old_key_notes():
        note(line)
    return Settings(dict(os.environ), cfg)


def progress_bar(
    first: str,
    total: int | None = None,
    prefix: str = "",
    budget_s: float | None = None,
    pairs_planned: int | None = None,
) -> tuple[AbstractContextManager[Any], ProgressFn]:
    """A transient progress bar on stderr and the callback that moves it: counted (done of total) when `total`
    is given, else a description and the elapsed time. When stderr is not a terminal (a CI log): a plain line
    at least every 15 s instead (perfci/cli/progress.py)."""
    _, err = consoles()
    if not err.is_terminal:
        plain = PlainProgress(f"perfci {prefix.strip() or 'run'}".lower(), note, budget_s=budget_s,
                              pairs_planned=pairs_planned)  # fmt: skip
        return plain, plain
    counted = total is not None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (BarColumn(), MofNCompleteColumn()) if counted else ()
    bar = Progress(TextColumn("{task.description}"), *columns, TimeElapsedColumn(), console=err, transient=True)
    task = bar.add_task(first, total=total)

    def update(event: ProgressEvent) -> None:
        if counted and isinstance(event, RoundStarted):
            bar.update(task, description=event.describe()[:60], completed=event.done, total=event.total)
        elif not counted:
            bar.update(task, description=f"{prefix}{event.describe()}"[:70])

    return bar, update


def plain_value(value: object) -> str:
    """A fingerprint or record value for a person: `-` for none, a mapping as `key value` pairs (a library that is
    not installed: `triton -`), a list joined by commas; never Python's repr of None or a dict."""
    if value is None:
        return "-"
    if isinstance(value, dict):
        return ", ".join(f"{k} {plain_value(v)}" for k, v in value.items()) or "-"
    if isinstance(value, list | tuple):
        return ", ".join(plain_value(v) for v in value) or "-"
    return str(value)


def note(text: str) -> None:
    """One diagnostic line on stderr."""
    err = consoles()[1]
    err.print(text, highlight=False, markup=False, soft_wrap=whole_lines(err))
