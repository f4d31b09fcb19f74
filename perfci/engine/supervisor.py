"""Supervise one worker process: feed it a job, read its events, enforce time-out and memory limit.

Returns the events it got plus, when the worker died mid-case, a synthetic error event for that case that names
the reason (signal, exit code, time-out, memory limit) and the tail of the worker's stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import psutil

POLL_S = 0.1


@dataclass(frozen=True)
class Limits:
    case_timeout_s: float
    memory_limit_bytes: int
    startup_timeout_s: float = 120.0


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total


def _stderr_tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    tail = " | ".join(line.strip() for line in text[-lines:] if line.strip())
    return f"; worker stderr: {tail[-400:]}" if tail else ""


def _exit_reason(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"worker process crashed ({name})"
    return f"worker process exited with code {returncode}"


def _read_events(proc: subprocess.Popen[bytes]) -> Iterator[dict[str, Any] | None]:
    """Yield parsed events, or None every POLL_S while the worker is silent. Ends at EOF."""
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    buf = b""
    fd = proc.stdout.fileno()
    try:
        while True:
            if not sel.select(timeout=POLL_S):
                yield None
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.strip():
                    yield json.loads(line)
    finally:
        sel.close()


def run_worker(
    job: dict[str, Any],
    limits: Limits,
    stderr_path: Path,
    on_event: Callable[[dict[str, Any]], None],
    env: dict[str, str] | None = None,
    python: str | None = None,
) -> None:
    """Run one worker to completion; every event (real or synthetic) goes to `on_event`."""
    proc = spawn_worker(stderr_path, env, python)
    assert proc.stdin is not None
    try:
        proc.stdin.write(json.dumps({**job, "parent_pid": os.getpid()}).encode() + b"\n")
        proc.stdin.close()
        _supervise(proc, limits, stderr_path, on_event)
    except BaseException:  # interrupted (Ctrl-C, SIGTERM) or failed: never leave the worker running on its own
        _kill(proc)
        proc.wait()
        raise


def spawn_worker(stderr_path: Path, env: dict[str, str] | None, python: str | None) -> subprocess.Popen[bytes]:
    """A fresh `python -m perfci.engine.worker` in its own session (a kill takes its children too), stderr to a log."""
    stderr_path.parent.mkdir(parents=True, exist_ok=True)
    with open(stderr_path, "ab") as err:
        return subprocess.Popen(
            [python or sys.executable, "-m", "perfci.engine.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            start_new_session=True,
        )


def _supervise(
    proc: subprocess.Popen[bytes],
    limits: Limits,
    stderr_path: Path,
    on_event: Callable[[dict[str, Any]], None],
) -> None:
    ps = psutil.Process(proc.pid)
    current: str | None = None
    deadline = time.monotonic() + limits.startup_timeout_s
    killed: str | None = None
    for event in _read_events(proc):
        if event is not None:
            kind = event.get("event")
            if kind == "start":
                current = event["case"]
                deadline = time.monotonic() + limits.case_timeout_s
            elif kind in ("result", "error", "idle"):
                current = None
                deadline = time.monotonic() + limits.case_timeout_s
            on_event(event)
            continue
        if time.monotonic() > deadline:
            killed = f"timed out after {limits.case_timeout_s:g} s"
        elif _tree_rss(ps) > limits.memory_limit_bytes:
            killed = f"exceeded the memory limit of {limits.memory_limit_bytes / 2**30:.1f} GiB"
        if killed:
            _kill(proc)
            break
    returncode = proc.wait()
    if current is None and killed is None and returncode == 0:
        return
    if current is None:
        reason = killed or _exit_reason(returncode)
        on_event({"event": "worker_failed", "message": reason + _stderr_tail(stderr_path)})
        return
    kind = "timeout" if killed and "timed out" in killed else "oom" if killed else "crash"
    message = (killed or _exit_reason(returncode) + " while measuring this case") + _stderr_tail(stderr_path)
    on_event({"event": "error", "case": current, "kind": kind, "message": message})


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


class WorkerLost(Exception):
    """A lockstep worker died, hung or exceeded its memory limit; `case` was in flight (or None)."""

    def __init__(self, reason: str, kind: str, case: str | None, worker: WorkerProcess | None = None) -> None:
        super().__init__(reason)
        self.reason, self.kind, self.case, self.worker = reason, kind, case, worker


class WorkerProcess:
    """A worker driven by commands (lockstep mode): send a command, then wait for an event, under the same
    time-out and memory limit as `run_worker`. Every event read is passed to `on_event`."""

    def __init__(
        self,
        job: dict[str, Any],
        limits: Limits,
        stderr_path: Path,
        on_event: Callable[[dict[str, Any]], None],
        env: dict[str, str] | None = None,
        python: str | None = None,
    ) -> None:
        self.limits, self.stderr_path, self.on_event = limits, stderr_path, on_event
        self.proc = spawn_worker(stderr_path, env, python)
        self.ps = psutil.Process(self.proc.pid)
        self.events = _read_events(self.proc)
        self.current: str | None = None
        self.send({**job, "lockstep": True, "parent_pid": os.getpid()})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self._lost(None)

    def wait_for(self, kind: str, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        for event in self.events:
            if event is not None:
                k = event.get("event")
                if k == "start":
                    self.current = event["case"]
                elif k in ("result", "error", "idle"):
                    self.current = None
                self.on_event(event)
                if k == kind:
                    return event
                continue
            if time.monotonic() > deadline:
                self._lost(f"timed out after {timeout_s:g} s", "timeout")
            if _tree_rss(self.ps) > self.limits.memory_limit_bytes:
                limit = self.limits.memory_limit_bytes / 2**30
                self._lost(f"exceeded the memory limit of {limit:.1f} GiB", "oom")
        self._lost(None)

    def _lost(self, reason: str | None, kind: str = "crash") -> NoReturn:
        _kill(self.proc)
        code = self.proc.wait()
        in_flight = " while measuring this case" if self.current is not None else ""
        message = (reason or _exit_reason(code) + in_flight) + _stderr_tail(self.stderr_path)
        raise WorkerLost(message, kind, self.current, self)

    def close(self) -> None:
        if self.proc.poll() is None:
            _kill(self.proc)
        self.proc.wait()
