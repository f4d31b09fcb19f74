"""Supervise one worker process: feed it a job, read its events, enforce time-out and memory limit.

Hands on the events it got (perfci/engine/protocol.py) plus, when the worker died mid-case, an `Error` for that
case that names the reason (signal, exit code, time-out, memory limit, a malformed message) and the tail of the
worker's stderr; when it died with no case in flight, a `WorkerFailed`. A line from the worker that is not a valid
event is treated as a crash: the worker is killed, since nothing it sends after it can be trusted.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, TypeVar

import msgspec
import psutil

from perfci.engine.protocol import (
    Command,
    Error,
    ErrorKind,
    Event,
    Idle,
    Job,
    ProtocolError,
    Result,
    Start,
    WorkerEvent,
    WorkerFailed,
    decode_event,
)

POLL_S = 0.1

E = TypeVar("E", bound=WorkerEvent)
EventHandler = Callable[[Event], None]


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


STDERR_TAIL_BYTES = 16 * 1024  # what is read of a worker's stderr log for its last lines


def _stderr_tail(path: Path, lines: int = 3, since: int = 0) -> str:
    """The last lines of a worker's stderr log written from byte `since` on (where the case in flight started:
    another case's output is not this one's; a crash was shown with an earlier case's print), from its last
    STDERR_TAIL_BYTES (a worker that wrote a gigabyte made perfci read the whole log into memory, 2 GB)."""
    try:
        with path.open("rb") as f:
            end = f.seek(0, os.SEEK_END)
            since = since if since <= end else min(LOG_KEPT_BYTES, end)  # the log was cut (`_cap_log`) since then
            f.seek(max(since, end - STDERR_TAIL_BYTES))
            text = f.read().decode(errors="replace").strip().splitlines()
    except OSError:
        return ""
    fatal = _fatal_error(text)
    if fatal:
        return f"; worker stderr: {fatal[-400:]}"
    tail = " | ".join(line.strip() for line in text[-lines:] if line.strip())
    return f"; worker stderr: {tail[-400:]}" if tail else ""


_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+) in (.+)$')
_NOT_USERS = re.compile(r"/site-packages/|/dist-packages/|/lib/python3|<frozen |/perfci/(engine|workloads|profilers)/")


def _fatal_error(lines: list[str]) -> str:
    """Python's dump at a fatal error (a segmentation fault: faulthandler), as one line: the error and the
    innermost frame of the user's code (`Fatal Python error: Segmentation fault; at test_b.py:9 in test_crash`),
    not the interpreter's and libraries' frames that end the dump; '' when there is no such dump."""
    start = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith("Fatal Python error:")), None)
    if start is None:
        return ""
    frames = [m for line in lines[start + 1 :] if (m := _FRAME.match(line))]
    users = [m for m in frames if not _NOT_USERS.search(m[1])]
    where = users[0] if users else frames[0] if frames else None
    at = f"; at {os.path.basename(where[1])}:{where[2]} in {where[3].strip()}" if where else ""
    return lines[start].strip() + at


LOG_CAP_BYTES = 64 * 2**20  # a worker's log past this is cut back to its head (a chatty workload wrote 915 MB)
LOG_KEPT_BYTES = 4 * 2**20


def _cap_log(path: Path) -> None:
    """Cut a worker's log that passed LOG_CAP_BYTES back to its first LOG_KEPT_BYTES, with a line that says so; the
    worker goes on appending after it (the log is opened for appending), so its last words, a crash's traceback
    included, are still there."""
    size = _log_size(path)
    if size <= LOG_CAP_BYTES:
        return
    with contextlib.suppress(OSError):
        os.truncate(path, LOG_KEPT_BYTES)
        with path.open("ab") as log:
            log.write(
                f"\n[perfci: this worker's output passed {LOG_CAP_BYTES >> 20} MiB; {(size - LOG_KEPT_BYTES) >> 20} "
                f"MiB after its first {LOG_KEPT_BYTES >> 20} MiB were cut here]\n".encode()
            )


def _log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _exit_reason(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"worker process crashed ({name})"
    return f"worker process exited with code {returncode}"


def _read_events(proc: subprocess.Popen[bytes]) -> Iterator[WorkerEvent | None]:
    """Yield decoded events, or None every POLL_S while the worker is silent. Ends at EOF; raises ProtocolError
    on a line that is not a valid event."""
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    buf = b""
    fd = proc.stdout.fileno()
    try:
        while True:
            if not sel.select(timeout=POLL_S):
                if proc.poll() is not None:  # the worker is gone; a child it forked may hold the pipe open for
                    return  # good (a multiprocessing.Process kept each round waiting for the case time-out)
                yield None
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.strip():
                    yield decode_event(line)
    finally:
        sel.close()


def _in_flight(event: WorkerEvent, current: str | None) -> str | None:
    """The case in flight after `event`."""
    if isinstance(event, Start):
        return event.case
    return None if isinstance(event, (Idle, Result, Error)) else current


def _resets_clock(event: WorkerEvent) -> bool:
    """Whether `event` starts a new case time-out: a step of a case began or ended."""
    return isinstance(event, (Start, Idle, Result, Error))


def _malformed(exc: ProtocolError) -> str:
    return f"worker sent a malformed message ({exc})"


def _memory_exceeded(ps: psutil.Process, limits: Limits) -> str | None:
    used = _tree_rss(ps)
    if used > limits.memory_limit_bytes:
        return (
            f"exceeded the memory limit of {_mib_or_gib(limits.memory_limit_bytes)}: the worker's processes held "
            f"{_mib_or_gib(used)} (Python, perfci and the imported libraries count)"
        )
    return None


def _mib_or_gib(n: float) -> str:
    """64 MiB, 1.5 GiB: a limit of 64 MiB was shown as "0.1 GiB"."""
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


def run_worker(
    job: Job,
    limits: Limits,
    stderr_path: Path,
    on_event: EventHandler,
    env: dict[str, str] | None = None,
    python: str | None = None,
) -> None:
    """Run one worker to completion; every event (real or synthetic) goes to `on_event`."""
    proc = spawn_worker(stderr_path, env, python)
    assert proc.stdin is not None
    try:
        proc.stdin.write(msgspec.structs.replace(job, parent_pid=os.getpid()).encode().encode() + b"\n")
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


def discard(proc: subprocess.Popen[bytes]) -> None:
    """Stop a worker process that was never given a job (a spare started ahead and not used)."""
    _kill(proc)
    proc.wait()


class _Killed(Exception):
    """Why a worker is killed: it timed out, exceeded the memory limit, or sent a malformed message."""

    def __init__(self, kind: ErrorKind, reason: str) -> None:
        super().__init__(reason)
        self.kind, self.reason = kind, reason


def _watched(
    events: Iterator[WorkerEvent | None],
    ps: psutil.Process,
    limits: Limits,
    timeout_s: float,
    per_step: bool,
    log: Path | None = None,
) -> Iterator[WorkerEvent]:
    """The one supervision loop, for both ways of driving a worker: its events, while the time-out and the memory
    limit are checked at every poll. The time-out counts from the start, and again from every step of a case when
    `per_step` (a worker running its job; a lockstep command has its own time-out). Raises `_Killed`."""
    deadline = time.monotonic() + timeout_s
    log_checked = 0.0
    try:
        for event in events:
            if log is not None and (now := time.monotonic()) >= log_checked + POLL_S:  # events can come for minutes
                _cap_log(log)
                log_checked = now
            if event is not None:
                if per_step and _resets_clock(event):
                    deadline = time.monotonic() + limits.case_timeout_s
                yield event
                continue
            if time.monotonic() > deadline:
                raise _Killed("timeout", f"timed out after {limits.case_timeout_s if per_step else timeout_s:g} s")
            if over := _memory_exceeded(ps, limits):
                raise _Killed("oom", over)
    except ProtocolError as exc:
        raise _Killed("crash", _malformed(exc)) from None


def _supervise(
    proc: subprocess.Popen[bytes],
    limits: Limits,
    stderr_path: Path,
    on_event: EventHandler,
) -> None:
    ps = psutil.Process(proc.pid)
    current: str | None = None
    since, owner = 0, ""  # where the output of `owner`, the last case to start a step, starts in the log
    killed: tuple[ErrorKind, str] | None = None
    try:
        for event in _watched(_read_events(proc), ps, limits, limits.startup_timeout_s, True, stderr_path):
            current = _in_flight(event, current)
            if current is not None and current != owner:
                since, owner = _log_size(stderr_path), current
            on_event(event)
    except _Killed as exc:
        killed = (exc.kind, exc.reason)
        _kill(proc)
    ending = _ending(current, killed, _reap(proc), stderr_path, since)
    if ending is not None:
        on_event(ending)


def _reap(proc: subprocess.Popen[bytes]) -> int:
    """Wait for the worker's exit, stop what it left running in its process group (a child a workload started
    with Popen kept running after perfci had exited 0), then collect its exit status. The group is signalled
    before the worker is reaped: until then its id cannot name another process group."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    _kill(proc)
    return proc.wait()


def _ending(
    current: str | None, killed: tuple[ErrorKind, str] | None, returncode: int, stderr_path: Path, since: int = 0
) -> Event | None:
    """What the end of a worker means for the runner: nothing (a clean exit), an `Error` for the case in flight,
    or a `WorkerFailed` when it died between cases."""
    if current is None and killed is None and returncode == 0:
        return None
    if current is None:
        reason = killed[1] if killed else _exit_reason(returncode)
        return WorkerFailed(reason + _stderr_tail(stderr_path))
    kind, reason = killed or ("crash", _exit_reason(returncode) + " while measuring this case")
    return Error(current, kind, reason + _stderr_tail(stderr_path, since=since))


SPARED_NAME = "perfci-watchdog"  # a container launcher's watchdog (ab/container_launch.py): it stops the container


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the worker's process group, then the worker's descendants outside it: a child a workload started in a
    session of its own (`start_new_session=True`) outlived the worker. They are listed before the group dies (then
    they are nobody's children) and killed after it, so that no process of the group sees one die and goes on (a
    container launcher whose client died first said its container had ended). A container launcher's watchdog is
    spared: it leaves the group on purpose, to stop the container once the launcher is gone."""
    strays: list[psutil.Process] = []
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if child.name() != SPARED_NAME:
                    strays.append(child)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    for stray in strays:
        with contextlib.suppress(psutil.Error):
            stray.kill()  # psutil checks that the pid still names that process


class WorkerLost(Exception):
    """A lockstep worker died, hung, exceeded its memory limit or sent a malformed message; `case` was in flight
    (or None)."""

    def __init__(self, reason: str, kind: ErrorKind, case: str | None, worker: WorkerProcess | None = None) -> None:
        super().__init__(reason)
        self.reason, self.kind, self.case, self.worker = reason, kind, case, worker


class WorkerProcess:
    """A worker driven by commands (lockstep mode): send a command, then wait for an event, under the same
    time-out and memory limit as `run_worker`. Every event read is passed to `on_event`."""

    def __init__(
        self,
        job: Job,
        limits: Limits,
        stderr_path: Path,
        on_event: EventHandler,
        env: dict[str, str] | None = None,
        python: str | None = None,
        spawned: subprocess.Popen[bytes] | None = None,
    ) -> None:
        """`spawned`: a worker process started ahead (`spawn_worker`, waiting for its job), adopted in place of a
        new one when it is still alive."""
        self.limits, self.stderr_path, self.on_event = limits, stderr_path, on_event
        alive = spawned is not None and spawned.poll() is None
        self.proc = spawned if spawned is not None and alive else spawn_worker(stderr_path, env, python)
        self.ps = psutil.Process(self.proc.pid)
        self.events = _read_events(self.proc)
        self.current: str | None = None
        self.since = 0  # where the output of `owner`, the last case to start a step, starts in the stderr log
        self.owner: str | None = None
        self.send(msgspec.structs.replace(job, lockstep=True, parent_pid=os.getpid()))

    def send(self, message: Job | Command) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(message.encode().encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self._lost(None)

    def wait_for(self, kind: type[E], timeout_s: float, per_step: bool = False) -> E:
        """Read events until one of type `kind`, which is returned, within `timeout_s`; with `per_step`, within
        `timeout_s` of the first step and the case time-out of every step of a case after it (a set-up)."""
        try:
            for event in _watched(self.events, self.ps, self.limits, timeout_s, per_step, self.stderr_path):
                self.current = _in_flight(event, self.current)
                if self.current is not None and self.current != self.owner:
                    self.since, self.owner = _log_size(self.stderr_path), self.current
                self.on_event(event)
                if isinstance(event, kind):
                    return event
        except _Killed as exc:
            self._lost(exc.reason, exc.kind)
        self._lost(None)

    def _lost(self, reason: str | None, kind: ErrorKind = "crash") -> NoReturn:
        _kill(self.proc)
        code = self.proc.wait()
        in_flight = " while measuring this case" if self.current is not None else ""
        since = self.since if self.current is not None else 0
        message = (reason or _exit_reason(code) + in_flight) + _stderr_tail(self.stderr_path, since=since)
        raise WorkerLost(message, kind, self.current, self)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        """Stop the worker without waiting for its exit (`close` waits)."""
        if self.proc.poll() is None:
            _kill(self.proc)

    def close(self) -> None:
        self.kill()
        self.proc.wait()
