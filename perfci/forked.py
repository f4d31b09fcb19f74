"""A function run in a forked helper process while this one goes on; its JSON value comes back through a pipe.

For work that is pure CPU over data this process already holds (the helper gets it through `fork`, without a
copy), on a machine with a CPU to spare: the type check of large results files while this process builds the
runs from the same bytes (schema.load_results_all).
The helper is a plain `os.fork` child. It runs only the function given, answers Ctrl-C and SIGTERM with their
default action (it dies, silently), writes nothing but its answer, and leaves by `os._exit`. A helper that
fails in any way (an exception, a crash, a kill, an answer that is not JSON) answers None: the caller then does
the work itself, so the helper can only ever save time.

`start_helper` returns None where a helper is not worth it or not safe: no `fork` (Windows), not Linux
(macOS's frameworks are not fork-safe), another thread running (a fork copies only the calling one), one CPU.
`PERFCI_HELPERS=0` turns helpers off.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

from perfci.cpus import usable_cpus

OFF_VARIABLE = "PERFCI_HELPERS"


def helpers_allowed() -> bool:
    """Whether a forked helper can run beside this process (the module docstring)."""
    return (
        hasattr(os, "fork")
        and sys.platform.startswith("linux")
        and os.environ.get(OFF_VARIABLE, "1") != "0"
        and threading.active_count() == 1
        and usable_cpus() >= 2
    )


class Helper:
    """A running helper: `answer()` waits for its value (None if it failed); leaving the `with` block ends it."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd
        self.reaped = False

    def answer(self) -> Any:
        chunks = []
        while chunk := os.read(self.fd, 1 << 16):
            chunks.append(chunk)
        _, status = os.waitpid(self.pid, 0)
        self.reaped = True
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0 or not chunks:
            return None
        try:
            return json.loads(b"".join(chunks))
        except ValueError:
            return None

    def __enter__(self) -> Helper:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _tb: TracebackType | None) -> None:
        os.close(self.fd)
        if not self.reaped:  # the caller left early (an error, Ctrl-C): no orphan, no zombie
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.reaped = True


def start_helper(work: Callable[[], Any]) -> Helper | None:
    """`work()` running in a forked helper (None where helpers are not allowed, or the fork failed). Its value
    must be JSON (lists, dicts, strings, numbers)."""
    if not helpers_allowed():
        return None
    try:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
    except OSError:
        return None
    if pid == 0:  # the helper
        code = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.close(read_fd)
            payload = json.dumps(work()).encode()
            view = memoryview(payload)
            while view:
                view = view[os.write(write_fd, view) :]
            code = 0
        except BaseException:  # the helper only ever answers or fails; the caller then does the work
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    return Helper(pid, read_fd)
