"""Command-line interface (typer): the only layer that reads argv/env, prints and exits.

A package rather than one module: one module per command group, so that
commands stay small and separate; `app.py` holds the shared machinery. Nothing outside `perfci.cli` prints.

The `perfci` command imports only the module of the command it runs (`entrypoint`): `perfci compare` then
imports neither the history store (SQLAlchemy) nor the engine or the workloads (numpy) (docs/scale.md).
`perfci.cli.app` as imported from here (`from perfci.cli import app`) has every command registered.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import MutableMapping, Sequence
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any, TextIO, cast

from perfci.api.sizes import parse_size
from perfci.cli import exits
from perfci.engine import WORKER_UNSET_VAR

if TYPE_CHECKING:
    from perfci.cli.app import app

COMMAND_MODULES = ("ci", "compare", "ingest", "history", "imports", "report", "run")
# the first word of a command line -> the modules that register it (every module for anything else: --help)
MODULE_OF: dict[str, tuple[str, ...]] = {
    "ci": ("ci",),
    "merge": ("ci",),
    "compare": ("compare",),
    "ab": ("compare",),
    "baseline": ("compare",),
    "history": ("ingest", "history"),
    "trend": ("history",),
    "import": ("imports",),
    "report": ("report",),
    "run": ("run",),
    "env": ("run",),
    "list": ("run",),
}
# `perfci history ingest` registers only its own command: its worker processes start before the database driver is
# imported (perfci/api/ingest.py)
MODULE_OF_TWO: dict[tuple[str, ...], tuple[str, ...]] = {("history", "ingest"): ("ingest",)}


def load_commands(argv: Sequence[str] | None = None) -> Any:
    """The typer app with the command of `argv` registered (`None`: every command)."""
    from perfci.cli.app import app

    words = [a for a in argv or () if not a.startswith("-")]
    only = MODULE_OF_TWO.get(tuple(words[:2])) or MODULE_OF.get(words[0]) if argv is not None and words else None
    for name in only or COMMAND_MODULES:
        import_module(f"perfci.cli.{name}")
    return app


def __getattr__(name: str) -> Any:
    if name == "app":
        return load_commands()
    raise AttributeError(f"module 'perfci.cli' has no attribute {name!r}")


class _Package(ModuleType):
    """The import system binds the submodule `perfci.cli.app` on this package as it is imported; the name `app`
    here stays the typer app (with every command), as it was when this package imported it at once."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "app" and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


SEPARATED = ("ab", "ci")  # commands whose revisions and workload paths a git-style `--` separates


def paths_after_separator(argv: list[str]) -> list[str]:
    """`perfci ab main -- perf/ bench.py` as `perfci ab main --path perf/ --path bench.py`: where revisions and
    paths can be confused, what follows `--` is paths, as in git."""
    if not argv or argv[0] not in SEPARATED or "--" not in argv:
        return argv
    cut = argv.index("--")
    return [*argv[:cut], *(x for p in argv[cut + 1 :] for x in ("--path", p))]


BLAS_THREADS_VAR = "OPENBLAS_NUM_THREADS"


def single_threaded_blas(environ: MutableMapping[str, str]) -> None:
    """OpenBLAS one-threaded in the CLI's own process, unless the user chose a thread count: its BLAS work (the
    statistics of compare, trend and the reports) is too small for threads, while OpenBLAS (numpy's, and scipy's
    own copy) starts one busy-waiting thread per CPU when it is imported. On a 16-core host `from scipy import
    special` took 4.7 s of CPU (0.8 s wall), and `perfci compare` of 5,000 cases 5.2-5.5 s wall and 8.6-8.8 s
    CPU, against 4.6 s and 4.3 s this way (docs/scale.md). Set before anything imports numpy; the variable is
    named in WORKER_UNSET_VAR, so the workers that measure get the environment as the user gave it."""
    if BLAS_THREADS_VAR in environ:
        return
    environ[BLAS_THREADS_VAR] = "1"
    unset = [v for v in environ.get(WORKER_UNSET_VAR, "").split(",") if v]
    environ[WORKER_UNSET_VAR] = ",".join([*unset, BLAS_THREADS_VAR])


# Deep enough for any document perfci reads (1,024 levels of nesting): copying, writing or pickling one nested 500
# levels deep in its free-form fields (a fingerprint, the settings, a round's telemetry) runs past Python's default
# 1,000 frames in merge, compare --out, baseline update and history ingest. Python 3.11 calls between Python
# functions do not grow the C stack.
RECURSION_LIMIT = 4_000


# Commands that read results files, decide and end: they run with the cyclic garbage collector off. The model they
# decode holds no cycles (reference counting frees it), but its hundreds of thousands of objects set off collections
# that scan them again and again: 0.4 s of the 1.8 s of CPU of a 5,000-case `perfci compare` (docs/scale.md). A
# process-wide choice, so made here, where the process is started, and not inside a library call.
COLLECTOR_OFF = ("compare", "report", "merge", "baseline")


def collector_off_for(argv: Sequence[str]) -> None:
    """Turn the cyclic garbage collector off for the commands of COLLECTOR_OFF."""
    words = [a for a in argv if not a.startswith("-")]
    if words and words[0] in COLLECTOR_OFF:
        gc.disable()


def printable_streams() -> None:
    """Output that an ASCII-only stdout or stderr cannot encode (`µs` under LC_ALL=C without UTF-8 mode) is written
    with `?` in its place: it ended a run with a traceback and exit 1, the gate's "regression", after everything
    had been measured."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(Exception):
                reconfigure(errors="replace")


class _ReaderMayLeave:
    """stdout or stderr for a reader that may stop reading (`perfci compare ... | head`, `... 2>&1 | head`): once
    the pipe is closed, what is written is dropped (the descriptor goes to /dev/null) and the command goes on, to
    its own exit code. A closed pipe was click's exit 1, the gate's "regression", even with --exit-zero."""

    def __init__(self, stream: TextIO) -> None:
        self._stream, self._gone = stream, False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._leave()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._leave()

    def _leave(self) -> None:
        self._gone = True
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, self._stream.fileno())  # the interpreter's last flush at exit goes there too
        os.close(null)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def entrypoint() -> None:
    """The `perfci` command: interrupts handled from the first moment (cli/exits.py), then the command."""
    with exits.interrupts_handled():
        printable_streams()
        sys.stdout = cast(TextIO, _ReaderMayLeave(sys.stdout))
        sys.stderr = cast(TextIO, _ReaderMayLeave(sys.stderr))  # `perfci ... 2>&1 | head`: the same pipe
        single_threaded_blas(os.environ)
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        collector_off_for(sys.argv[1:])
        load_commands(sys.argv[1:])(args=paths_after_separator(sys.argv[1:]), prog_name="perfci")


__all__ = ["app", "entrypoint", "parse_size"]
