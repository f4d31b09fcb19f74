"""A helper process dies with the process that started it, even when that one is killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

CHILD = (
    "import os, time\n"
    "from perfci.parent_death import die_with_parent\n"
    "assert die_with_parent(os.getppid())\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)
PARENT = (
    "import subprocess, sys\n"
    f"child = subprocess.Popen([sys.executable, '-c', {CHILD!r}], stdout=subprocess.PIPE, text=True)\n"
    "assert child.stdout.readline().strip() == 'ready'\n"
    "print(child.pid, flush=True)\n"
    "child.wait()\n"
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_helper_dies_when_its_parent_is_killed() -> None:
    """History-ingest loaders outlived a SIGKILLed perfci for good, blocked on a pipe holding the caller's stdout."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        with open(f"/proc/{child}/stat") as stat:  # reaped by init, or a zombie waiting to be
            if stat.read().split(") ", 1)[1].startswith("Z"):
                return
        time.sleep(0.05)
    os.kill(child, signal.SIGKILL)
    pytest.fail("the helper outlived its parent")
