"""A worker's stderr in an error message is the failing case's own: a crash was shown with what another case of
the same worker had printed before it (`worker stderr: MESSAGE FROM a_noisy`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

WORKLOADS = """
import ctypes
import sys

import perfci


@perfci.workload
def a_noisy(ctx):
    print("MESSAGE FROM a_noisy", file=sys.stderr)
    return lambda: sum(range(100))


@perfci.workload
def c_crash(ctx):
    print("CRASHING NOW", file=sys.stderr, flush=True)
    ctypes.string_at(0)
"""


def test_a_crash_shows_its_own_output_not_an_earlier_cases(tmp_path: Path) -> None:
    (tmp_path / "wl.py").write_text(WORKLOADS)
    out = tmp_path / "o"
    # seed 1 sets a_noisy up before c_crash in the first round's worker (the order is drawn per round)
    cmd = [sys.executable, "-m", "perfci", "run", "wl.py", "--rounds", "2", "--seed", "1", "--out", str(out)]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    log = (out / "logs" / "worker-r0-0.log").read_text()
    assert log.index("MESSAGE FROM a_noisy") < log.index("CRASHING NOW")  # both in the crashed worker's log
    cases = {c["id"]: c for c in json.loads((out / "results.json").read_text())["cases"]}
    message = cases["wl.c_crash@cpu"]["errors"][0]["message"]
    assert message.endswith("worker stderr: CRASHING NOW") and "a_noisy" not in message, message
    assert cases["wl.a_noisy@cpu"]["status"] == "ok"
