"""Command-line interface (typer): the only layer that reads argv/env, prints and exits.

A package rather than one module: one module per command group, so that
commands stay small and separate; `app.py` holds the shared machinery. Nothing outside `perfci.cli` prints.

The `perfci` command imports only the module of the command it runs (`entrypoint`): `perfci compare` then
imports neither the history store (SQLAlchemy) nor the engine or the workloads (numpy) (docs/scale.md).
`perfci.cli.app` as imported from here (`from perfci.cli import app`) has every command registered.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from collections.abc import MutableMapping, Sequence
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn

from perfci.api.sizes import parse_size
from perfci.engine import WORKER_UNSET_VAR

if TYPE_CHECKING:
    from perfci.cli.app import app

COMMAND_MODULES = ("ci", "compare", "history", "imports", "report", "run")
# the first word of a command line -> the module that registers it (every module for anything else: --help)
MODULE_OF = {
    "ci": "ci",
    "merge": "ci",
    "compare": "compare",
    "ab": "compare",
    "baseline": "compare",
    "history": "history",
    "trend": "history",
    "import": "imports",
    "report": "report",
    "run": "run",
    "env": "run",
    "list": "run",
}


def load_commands(argv: Sequence[str] | None = None) -> Any:
    """The typer app with the command of `argv` registered (`None`: every command)."""
    from perfci.cli.app import app

    words = [a for a in argv or () if not a.startswith("-")]
    only = MODULE_OF.get(words[0]) if argv is not None and words else None
    for name in (only,) if only else COMMAND_MODULES:
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


# Deep enough for any document the JSON parsers accept (orjson stops at 1,024 levels of nesting): copying,
# writing or pickling one nested 500 levels deep in its free-form fields (a fingerprint, the settings, a round's
# telemetry) ran past Python's default 1,000 frames (fuzzing: a traceback in merge, compare --out, baseline update
# and history ingest). Python 3.11 calls between Python functions do not grow the C stack.
RECURSION_LIMIT = 4_000


INTERRUPTED_EXIT = 130  # Ctrl-C or SIGTERM, here and in the commands' guard (cli/app.py)


_signals: list[int] = []  # Ctrl-C or SIGTERM received, from the first moment
_kept: list[object] = []  # a command's data left for the operating system to free (keep_until_exit)


def keep_until_exit(data: object) -> None:
    """Leave `data` (e.g. two loaded 5,000-case runs: two million objects) to the operating system: the process
    ends without freeing it one object at a time and without the interpreter's teardown (a fifth of a second),
    once stdout and stderr are flushed and the exit handlers (`atexit`) have run. For commands whose files are
    all written and closed when they return."""
    _kept.append(data)


def on_interrupt(signum: int, frame: object) -> None:
    """Ctrl-C's and SIGTERM's handler: remembered, then a KeyboardInterrupt (a cancelled CI job's SIGTERM takes
    the way out of Ctrl-C)."""
    _signals.append(signum)
    raise KeyboardInterrupt


def entrypoint() -> None:
    # Ctrl-C and SIGTERM from the first moment. While the commands were imported (half a second) a cancelled CI
    # job's SIGTERM killed perfci with the signal (143); the interrupt could also surface as another error (a
    # RuntimeError from a class being made), end typer's start-up with SIGINT, or become click's "Aborted!" and
    # exit 1, which CI reads as a regression (kill trials, benchmarks/kill_check.py). The README promises 130;
    # each command's guard (cli/app.py) handles the interrupts of its body.
    main_thread = threading.current_thread() is threading.main_thread()  # where signal handlers live
    if main_thread:
        signal.signal(signal.SIGTERM, on_interrupt)
        signal.signal(signal.SIGINT, on_interrupt)
    try:
        single_threaded_blas(os.environ)
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        load_commands(sys.argv[1:])(prog_name="perfci")
    except SystemExit as exc:
        if exc.code == INTERRUPTED_EXIT or _signals:  # after an interrupt, whatever ended the command
            _exit_interrupted()
        if main_thread:
            # the command is done and its files are written: a SIGTERM during the interpreter's shutdown (a tenth
            # of a second, with the signal's default action back) ended a finished run with -15 (kill trials)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if _kept and isinstance(exc.code, int):
            _exit_now(exc.code)
        raise
    except BaseException:
        if not _signals:
            raise
        sys.stderr.write("interrupted.\n")  # an interrupt outside a command's guard: nothing measured or written
        _exit_interrupted()


def _exit_now(code: int) -> NoReturn:
    """End a finished command at once (keep_until_exit): flush, run the exit handlers, `os._exit`."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or broken pipe: the normal exit path words it
        raise SystemExit(code) from None
    atexit._run_exitfuncs()
    os._exit(code)


def _exit_interrupted() -> NoReturn:
    """Exit 130 for sure. CPython remembers a KeyboardInterrupt that went through code run by `exec` of a text
    (dataclasses make their methods so, while modules are imported) and then ends the process with SIGINT
    whatever exit code it was given: 6 of 40 SIGTERMs in the first half second ended so (exit -2), after the
    interrupt had been handled. Every clean-up of perfci's is a `with` or `finally` that has run by now."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(INTERRUPTED_EXIT)


__all__ = ["app", "entrypoint", "parse_size"]
