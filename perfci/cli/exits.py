"""How the `perfci` process ends: the exit code of an interrupt, and a finished command's shutdown.

How the pieces fit (each answers a finding of the kill tests, tests/integration/test_kill_trials.py and
benchmarks/kill_check.py):

1. `interrupts_handled` wraps the whole command, from the first moment: Ctrl-C and SIGTERM (a cancelled CI job)
   become a KeyboardInterrupt. Without it, a SIGTERM while the commands are imported (half a second) killed perfci
   with the signal (143), or became click's "Aborted!" and exit 1, which CI reads as a regression.
2. `command_guard` (used by each command's guard, cli/app.py) unwinds the command's body on an interrupt, so that
   its worker processes are killed and its `with` and `finally` blocks run; what was measured is already on disk.
   The command then exits 130 with one line.
3. After an interrupt, whatever ended the command, the process exits 130 at once (`os._exit`): CPython remembers a
   KeyboardInterrupt that went through code run from a text (dataclasses make their methods so) and would end the
   process with SIGINT whatever code it was given.
4. A finished command ends through the interpreter's normal shutdown, with its exit code; a SIGTERM from then on
   is ignored: the work is done and written. (Ending it with `os._exit` instead, to skip freeing a large
   comparison's objects, saved less than the 0.3 s or a fifth of the command's time that would be worth a second
   exit path: docs/scale.md.)

The signal handler can only tell the rest of the process through module state, kept in perfci/interrupts.py (below
the CLI, so that a long loop of the library can ask for it too).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from perfci.interrupts import interrupted, on_interrupt

INTERRUPTED_EXIT = 130  # Ctrl-C or SIGTERM


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()  # where signal handlers live


@contextmanager
def interrupts_handled() -> Iterator[None]:
    """Around the whole command (1, 3 and 4 above)."""
    main_thread = _main_thread()
    if main_thread:
        signal.signal(signal.SIGTERM, on_interrupt)
        signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield
    except SystemExit as exc:
        if exc.code == INTERRUPTED_EXIT or interrupted():
            _exit_interrupted()
        if main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # done and written: no -15 during the shutdown
        raise
    except BaseException:
        if not interrupted():
            raise
        sys.stderr.write("interrupted.\n")  # outside a command's guard: nothing measured or written
        _exit_interrupted()


@contextmanager
def command_guard() -> Iterator[None]:
    """Around a command's body (2 above): SIGTERM unwinds it as Ctrl-C does; the previous handler comes back."""
    main_thread = _main_thread()
    previous = signal.signal(signal.SIGTERM, on_interrupt) if main_thread else None
    try:
        yield
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _exit_interrupted() -> NoReturn:
    """Exit 130 for sure (3 above); every clean-up of perfci's is a `with` or `finally` that has run by now."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(INTERRUPTED_EXIT)
