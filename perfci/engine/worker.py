"""Worker process: measures one round of a list of cases and streams one JSON event per line to the runner.

Started by the runner as `python -m perfci.engine.worker` with a JSON job on stdin. The worker moves its stdout and
stdin to private descriptors for the protocol and points fd 1 at stderr and fd 0 at /dev/null, so prints in user
workloads never corrupt it and reads of stdin neither eat it nor wait on it.

A round has three phases. (1) Each case is set up, checked, warmed up and calibrated. (2) Sampling runs in
`slices`: every live case samples for budget/slices, case after case, slice after slice, so each case's
samples are spread over the whole round and drift hits all cases alike. (3) Each case finishes (energy
block, throttle rule, teardown) and its result is sent. With slices=1 the cases are measured one after the
other. Messages (perfci/engine/protocol.py): `Start(case)` whenever a case is in flight, `Idle` when none is, and
`Result` or `Error` once per case. A crash, hang or memory blow-up is seen by the runner as a `Start` with no
`Idle`/`Result`/`Error` after it; it blames that case and restarts a worker for the others.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import IO, NoReturn, TypeVar

from perfci.engine.case_session import CaseSession, CheckFailed, Finishing, finish, finish_on_gpu, prepare
from perfci.engine.preload import learned_imports, preload
from perfci.engine.protocol import (
    HEAP_PAD_VAR,
    PRELOAD_VAR,
    Done,
    Error,
    Finish,
    Idle,
    Job,
    Prepared,
    Ready,
    Released,
    Sampled,
    Start,
    WorkerEvent,
    decode_command,
    decode_event,
    decode_job,
)
from perfci.parent_death import die_with_parent
from perfci.workloads.api import LocatedFailure, SkipCase

T = TypeVar("T")


def _emit(stream: IO[str], event: WorkerEvent) -> None:
    stream.write(event.encode() + "\n")
    stream.flush()


MAX_MESSAGE_CHARS = 4_000  # of an error's message (a 20 MB message went into results.json whole)


def _text(exc: BaseException) -> str:
    text = str(exc)
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    return f"{text[:MAX_MESSAGE_CHARS]}... ({len(text) - MAX_MESSAGE_CHARS:,} more characters)"


def _error_event(case_id: str, exc: BaseException) -> Error:
    if isinstance(exc, SkipCase):
        return Error(case_id, "skipped", _text(exc))
    if isinstance(exc, CheckFailed):
        return Error(case_id, "check", _text(exc))
    if isinstance(exc, MemoryError):
        return Error(case_id, "oom", "the workload ran out of memory")
    if isinstance(exc, SystemExit):
        return Error(case_id, "raised", f"the workload called sys.exit({exc.code!r})")
    if isinstance(exc, LocatedFailure):
        return Error(case_id, "raised", _text(exc))
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    where = f"{os.path.basename(frame.filename)}:{frame.lineno}"
    said = f"{type(exc).__name__}: {_text(exc)}" if str(exc) else type(exc).__name__
    return Error(case_id, "raised", f"{said} (at {where})")


def _guarded(out: IO[str], case_id: str, step: Callable[[], T]) -> tuple[bool, T | None]:
    """Run one step of a case with the case marked in flight; report an exception as the case's error. The
    working folder is put back after the step (a set-up's `os.chdir` made the next cases' workload
    files, named by relative paths, impossible to import)."""
    _emit(out, Start(case_id))
    cwd = os.getcwd()
    try:
        value = step()
    # the workload's failure, reported for this case only; a worker is in a session of its own, so a
    # KeyboardInterrupt (or any BaseException) here is the workload's: it read as "worker process crashed (SIGINT)"
    except BaseException as exc:
        _emit(out, _error_event(case_id, exc))
        return False, None
    finally:
        _back_to(cwd)
    _emit(out, Idle())
    return True, value


def _back_to(cwd: str) -> None:
    with contextlib.suppress(OSError):
        if os.getcwd() != cwd:
            os.chdir(cwd)


def _prepare_all(job: Job, out: IO[str]) -> list[CaseSession]:
    sessions: list[CaseSession] = []
    for case in job.cases:
        ok, session = _guarded(out, case.id, functools.partial(prepare, case, job))
        if ok and session is not None:
            sessions.append(session)
    return sessions


def _result_line(s: CaseSession, part: Finishing | None = None) -> str:
    """The case's result, encoded and read back as the supervisor will read it: a result that cannot be sent
    (a note that is not JSON, work of the wrong type) is this case's error, raised while the case is in flight.
    Sent after the case's `Idle`, it was a malformed message with no case in flight, and the supervisor blamed
    every case left in the round."""
    line = finish(s, part).encode()
    decode_event(line)
    return line


def _finish_all(sessions: list[CaseSession], out: IO[str], release: bool = False) -> None:
    """Every case's result. With `release` (lockstep), every case's GPU part comes first (`finish_on_gpu`), then
    `Released`, then the rest of each finish, on the host only."""
    parts: dict[str, Finishing] = {}
    if release:
        for s in list(sessions):
            last = s is sessions[-1]  # its profiler is stopped after `Released` (kineto.take_slice, keep_open)
            ok, part = _guarded(out, s.case_id, functools.partial(finish_on_gpu, s, last))
            if ok and part is not None:
                parts[s.case_id] = part
            else:
                sessions.remove(s)
        _emit(out, Released())
    for s in sessions:
        ok, line = _guarded(out, s.case_id, functools.partial(_result_line, s, parts.get(s.case_id)))
        if ok and line is not None:
            out.write(line + "\n")
            out.flush()


def run_job(job: Job, out: IO[str]) -> None:
    sessions = _prepare_all(job, out)
    slices = max(1, job.slices)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for k in range(slices):
            for s in [s for s in sessions if s.sampler.stop_reason is None]:
                step = functools.partial(s.sampler.run_slice, s.settings.budget_s / slices, k == slices - 1)
                if not _guarded(out, s.case_id, step)[0]:
                    sessions.remove(s)
    finally:
        if gc_was_enabled:
            gc.enable()
    _finish_all(sessions, out)


def run_lockstep(job: Job, out: IO[str], commands: IO[str], started: dict[str, float] | None = None) -> None:
    """Lockstep mode (A/B pairs): after set-up (answered by `Prepared`), sample only when told, one command per
    line on stdin: `Sample(case, n, rewarm)` -> `rewarm` untimed calls and `n` samples, then `Sampled`;
    `Finish` -> results. The driver alternates two such workers sample by sample, so both revisions see the
    same machine state (perfci/engine/lockstep.py). `started`, the worker's own start (`main`), is added to
    its first case's step times."""
    before = set(sys.modules)
    sessions = {s.case_id: s for s in _prepare_all(job, out)}
    if started and sessions:
        next(iter(sessions.values())).phases_s.update(started)
    _pin(job)  # only now: both workers of a pair start, import and set up at once, each on any CPU
    iterations = {c: s.sampler.iterations for c, s in sessions.items()}
    _emit(out, Prepared(tuple(sessions), iterations, learned_imports(before)))
    gc.disable()
    while line := commands.readline():
        cmd = decode_command(line)
        if isinstance(cmd, Finish):
            break
        s = sessions.get(cmd.case)
        if s is None:
            _emit(out, Sampled(cmd.case, 0.0, missing=True))
            continue
        if cmd.iterations > 0:
            s.sampler.iterations = cmd.iterations  # the pair's agreed count (both sides the same)
        ok, elapsed = _guarded(out, s.case_id, functools.partial(s.sampler.take, cmd.n, cmd.rewarm))
        if not ok:
            del sessions[s.case_id]
        _emit(out, Sampled(s.case_id, elapsed or 0.0, failed=not ok))
    for s in list(sessions.values()):
        if s.sampler.samples:
            s.sampler.stop_reason = "lockstep"
            continue
        # never sampled: the case failed on the other side (in its set-up, or at its first sample), so the driver
        # had no pair to sample; it is measured here alone, as an ordinary round, so that this side's result holds
        if not _guarded(out, s.case_id, functools.partial(s.sampler.run_slice, s.settings.budget_s))[0]:
            del sessions[s.case_id]
    gc.enable()
    _finish_all(list(sessions.values()), out, release=True)


def _pin(job: Job) -> None:
    """Move this worker onto the job's CPUs. A lockstep worker moves there only once its cases are set up: the
    two workers of a pair share those CPUs (perfci/engine/lockstep.py) but start at the same time, and with one
    CPU each start (Python, torch, CUDA, set-up, calibration) took twice as long (measured on an H200 runner:
    25 s a pair, docs/measurement.md); sampling, the only part that must not migrate, happens after it."""
    if job.cpu_affinity:
        os.sched_setaffinity(0, set(job.cpu_affinity))


# Set to the container's name for a worker in a container image (perfci/ab/container_launch.py, which spells it
# too): the worker's parent is the runtime's there, and `<runtime> kill` stops it, not its parent's death.
CONTAINER_VAR = "PERFCI_CONTAINER"


_heap_pad: list[bytearray] = []  # held for the worker's life


def shift_heap(environ: dict[str, str] | os._Environ[str]) -> int:
    """Allocate and keep the number of bytes the runner drew for this worker (0-65535, `HEAP_PAD_VAR`) before
    anything else is set up: every later allocation of the worker sits at another offset, so a heap layout that
    happens to favour one side is not the same layout in every pair (docs/measurement.md, "Layout")."""
    try:
        n = max(0, min(65_535, int(environ.get(HEAP_PAD_VAR, "0"))))
    except ValueError:
        n = 0
    _heap_pad.append(bytearray(n))
    return n


def _private_stdin() -> IO[str]:
    """The runner's commands on a descriptor of their own, and fd 0 on /dev/null: a workload or test that reads
    stdin (`input()`, `sys.stdin.readline()`) reads nothing, as on both sides of a pair, instead of eating the
    protocol or waiting on it (a test's `readline()` hung its worker until the time-out, and the gate passed)."""
    commands = os.fdopen(os.dup(0), "r", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - the process's stdin, open until it exits
    return commands


def main() -> None:
    shift_heap(os.environ)
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    commands = _private_stdin()
    t0 = time.perf_counter()
    preload(os.environ.get(PRELOAD_VAR))  # a lockstep worker started ahead of its pair: imports while it waits
    t1 = time.perf_counter()
    job = decode_job(commands.readline())
    # a spare whose job came before its imports were done kept its pair waiting (waited_for_job near 0)
    started = {"preload": t1 - t0, "waited_for_job": time.perf_counter() - t1}
    # in a container its parent is the runtime's (see CONTAINER_VAR); elsewhere a parent gone already: exit now
    if not os.environ.get(CONTAINER_VAR) and not die_with_parent(job.parent_pid):
        os._exit(1)
    if not job.lockstep:
        _pin(job)
    _emit(protocol, Ready())
    if job.lockstep:
        run_lockstep(job, protocol, commands, started)
        _close_pytest_sessions()  # now: the driver kills a lockstep worker once its pair is closed
        _emit(protocol, Done())
        commands.read()  # until the driver closes the pair (`WorkerProcess.close`): no exit during another pair
    else:
        run_job(job, protocol)
        _emit(protocol, Done())
    _exit(protocol)


THREAD_GRACE_S = 1.0  # how long a finished worker waits for threads a workload left running


def _exit(protocol: IO[str]) -> NoReturn:
    """End the worker once its job is done: its output flushed, then the process, without waiting for threads a
    workload started and left running (a non-daemon thread kept the interpreter, and the run, waiting for it: a
    thread that loops kept `perfci run` from ever ending). Such threads get THREAD_GRACE_S to finish."""
    protocol.close()
    deadline = time.monotonic() + THREAD_GRACE_S
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))
    _close_pytest_sessions()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    _end_children()
    os._exit(0)


def _close_pytest_sessions() -> None:
    """End the pytest sessions waiting between tests (workloads/pytest_capture.py), if any: their session- and
    module-scoped fixtures are torn down, as pytest does at its end (a worker ends with os._exit, and a lockstep
    worker is killed once its pair is closed: atexit handlers run in neither)."""
    capture = sys.modules.get("perfci.workloads.pytest_capture")
    if capture is not None:
        with contextlib.suppress(Exception):
            capture.close_sessions()


def _end_children() -> None:
    """Kill the processes a workload started and left running. The runner kills the worker's process group, but a
    child in a session of its own (`start_new_session=True`) is outside it, and once the worker has exited it is
    nobody's child the runner can find."""
    import psutil

    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            child.kill()


if __name__ == "__main__":
    main()
