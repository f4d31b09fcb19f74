"""A helper process that dies with the process that started it (Linux's PR_SET_PDEATHSIG): a worker, a container
launcher, a history-ingest loader. Killed by SIGKILL (a CI runner ending the job, the OOM killer), the parent
runs no clean-up, and its helpers kept running: workers spinning in a workload call, loaders blocked for good on
a pipe with the caller's stdout held open."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> bool:
    """Ask Linux to SIGKILL this process when its parent dies; False when `parent_pid` is already gone (it died
    before the request: the caller exits now). Elsewhere than Linux, only that check."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    return not parent_pid or os.getppid() == parent_pid
