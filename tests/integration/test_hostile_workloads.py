"""Workloads that misbehave in ways a third fuzzing pass found (docs/reliability.md, #33 on): each becomes its own
case's error, or one definition error at import, and the other workloads' results are still measured and written."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # no verdict or time-out of a real measurement: runs beside other tests

FAST = '{"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.03, "min_sample_s": 0.0005}'
GOOD = f"""import perfci
FAST = {FAST}
@perfci.workload(params={{"n": [100, 200, 300, 400]}}, timing=FAST)
def good(ctx, n):
    data = list(range(n))
    return lambda: sum(data)
"""
BAD = f"""import os
import perfci
FAST = {FAST}
@perfci.workload(timing=FAST)
def nan_flops(ctx):
    ctx.flops = float("nan")
    return lambda: None
@perfci.workload(timing=FAST)
def huge_bytes(ctx):
    ctx.bytes = 10**400
    return lambda: None
@perfci.workload(timing=FAST)
def text_flops(ctx):
    ctx.flops = "abc"
    return lambda: None
@perfci.workload(timing=FAST)
def odd_note(ctx):
    ctx.notes["x"] = object()
    return lambda: None
@perfci.workload(timing=FAST)
def wanders(ctx):
    os.chdir("/")
    return lambda: None
"""


def perfci(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perfci", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_bad_work_notes_and_wandering_set_ups_fail_only_their_own_cases(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "bad.py").write_text(BAD)
    (tmp_path / "w" / "zok.py").write_text(GOOD)
    proc = perfci("run", "w", "--rounds", "2", "--out", "o", cwd=tmp_path)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    cases = {c["id"]: c for c in json.loads((tmp_path / "o" / "results.json").read_text())["cases"]}
    errors = {i: c["errors"][0]["message"] for i, c in cases.items() if c["status"] == "error"}
    assert set(errors) == {"bad.nan_flops@cpu", "bad.huge_bytes@cpu", "bad.text_flops@cpu", "bad.odd_note@cpu"}
    assert "ctx.flops=nan is not a number from 0 to 1e+30" in errors["bad.nan_flops@cpu"]
    assert "ctx.bytes=1000000" in errors["bad.huge_bytes@cpu"]
    assert "ctx.flops= must be a number, not 'abc'" in errors["bad.text_flops@cpu"]
    assert "not JSON serializable" in errors["bad.odd_note@cpu"]
    assert all(c["errors"][0]["kind"] == "raised" for i, c in cases.items() if i in errors)  # not "infrastructure"
    ok = [i for i, c in cases.items() if c["status"] == "ok"]
    assert sorted(ok) == ["bad.wanders@cpu", *(f"zok.good[n={n}]@cpu" for n in (100, 200, 300, 400))]
    assert all(len(cases[i]["rounds"]) == 2 for i in ok)


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("@perfci.workload(devices=[1])\ndef d(ctx):\n    return lambda: None\n", "device 1 is not a device name"),
        ('@perfci.workload(params={"n": [10**5000]})\ndef d(ctx, n):\n    return lambda: None\n', "beyond 64 bits"),
        ('@perfci.workload(params={"s": ["\\ud800"]})\ndef d(ctx, s):\n    return lambda: None\n', "lone surrogate"),
        (
            '@perfci.workload(name="x")\ndef a(ctx):\n    return lambda: None\n'
            '@perfci.workload(name="x")\ndef b(ctx):\n    return lambda: None\n',
            "two workloads are named 'x'",
        ),
    ],
)
def test_hostile_definitions_are_one_error_at_import(tmp_path: Path, source: str, words: str) -> None:
    (tmp_path / "wl.py").write_text("import perfci\n" + source)
    proc = perfci("list", "wl.py", cwd=tmp_path)
    assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


LEFT_RUNNING = f"""import subprocess, sys, threading
import perfci
FAST = {FAST}
stop = False
@perfci.workload(timing=FAST)
def thread_left_looping(ctx):
    def spin():
        while not stop:
            sum(range(1000))
    threading.Thread(target=spin, daemon=False).start()
    return lambda: sum(range(100))
@perfci.workload(timing=FAST)
def child_left_running(ctx):
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)  # perfci-leftover-marker"])
    return lambda: None
@perfci.workload(timing=FAST)
def child_in_its_own_session(ctx):
    code = "import time; time.sleep(300)  # perfci-leftover-marker"
    subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    return lambda: None
def _forever():
    import time
    while True:
        time.sleep(0.1)
@perfci.workload(timing=FAST)
def forked_left_running(ctx):
    import multiprocessing
    multiprocessing.get_context("fork").Process(target=_forever).start()  # holds the worker's pipes
    return lambda: None
"""


def test_threads_and_child_processes_a_workload_leaves_running_end_with_its_worker(tmp_path: Path) -> None:
    """A non-daemon thread kept the worker, and `perfci run`, from ever ending (the interpreter waits for it); a
    child started with Popen kept running after perfci exited 0."""
    (tmp_path / "left.py").write_text(LEFT_RUNNING)
    proc = perfci("run", "left.py", "--rounds", "2", "--out", "o", "--timeout", "60", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert [c["status"] for c in doc["cases"]] == ["ok", "ok", "ok", "ok"]
    # a forked child holding the worker's pipes kept each round waiting for the case time-out (2 x 60 s here)
    took = datetime.fromisoformat(doc["finished_at"]) - datetime.fromisoformat(doc["started_at"])
    assert took.total_seconds() < 60, took
    left = subprocess.run(["pgrep", "-f", "perfci-leftover-marker"], capture_output=True, text=True)
    assert left.stdout.strip() == "", "a workload's child process outlived its worker"


HANGS_WITH_A_CHILD = """
import subprocess, sys, time
import perfci
@perfci.workload
def hangs_with_a_child(ctx):
    code = "import time; time.sleep(300)  # perfci-hung-marker"
    subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    return lambda: time.sleep(600)
"""


def test_a_timed_out_workers_children_in_their_own_session_are_killed_with_it(tmp_path: Path) -> None:
    """A worker killed at its time-out took its process group along, but not a child in a session of its own."""
    (tmp_path / "hang.py").write_text(HANGS_WITH_A_CHILD)
    proc = perfci("run", "hang.py", "--rounds", "2", "--out", "o", "--timeout", "3", cwd=tmp_path)
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert [[e["kind"] for e in c["errors"]] for c in doc["cases"]] == [["timeout"]], proc.stderr[-2000:]
    left = subprocess.run(["pgrep", "-f", "perfci-hung-marker"], capture_output=True, text=True)
    assert left.stdout.strip() == "", "a timed-out workload's child process outlived its worker"


INTERRUPTS = """
import perfci
class Mine(BaseException):
    pass
@perfci.workload
def interrupts(ctx):
    def call():
        raise KeyboardInterrupt
    return call
@perfci.workload
def base_exception(ctx):
    def call():
        raise Mine("custom")
    return call
@perfci.workload
def fine(ctx):
    return lambda: None
"""


def test_a_keyboard_interrupt_or_a_base_exception_a_workload_raises_is_its_error(tmp_path: Path) -> None:
    """A worker is in a session of its own: a KeyboardInterrupt in it is the workload's. It read "worker process
    crashed (SIGINT)", and a BaseException of the file's own was named with perfci's module name for the file."""
    (tmp_path / "ki.py").write_text(INTERRUPTS)
    proc = perfci("run", "ki.py", "--rounds", "2", "--out", "o", cwd=tmp_path)
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    said = {c["id"]: [(e["kind"], e["message"]) for e in c["errors"]] for c in doc["cases"]}
    assert said == {
        "ki.interrupts@cpu": [("raised", "KeyboardInterrupt (at ki.py:8)")],
        "ki.base_exception@cpu": [("raised", "Mine: custom (at ki.py:13)")],
        "ki.fine@cpu": [],
    }, proc.stderr[-2000:]
