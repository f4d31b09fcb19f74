"""Worker process: measures one round of a list of cases and streams one JSON event per line to the runner.

Started by the runner as `python -m perfci.engine.worker` with a JSON job on stdin. The worker moves its stdout to a
private descriptor for the protocol and points fd 1 at stderr, so prints in user workloads never corrupt it.

A round has three phases. (1) Each case is set up, checked, warmed up and calibrated. (2) Sampling runs in
`slices`: every live case samples for budget/slices, case after case, slice after slice, so each case's
samples are spread over the whole round and drift hits all cases alike. (3) Each case finishes (energy
block, throttle rule, teardown) and its result is sent. With slices=1 the cases are measured one after the
other. Events: {"event": "start", "case": id} whenever a case is in flight, {"event": "idle"} when none is,
and {"event": "result" | "error", "case": id, ...} once per case. A crash, hang or memory blow-up is seen by
the runner as a "start" with no "idle"/"result"/"error" after it; it blames that case and restarts a worker
for the others.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable
from typing import IO, Any, TypeVar

from perfci.engine.case_session import CaseSession, CheckFailed, finish, prepare
from perfci.workloads.api import SkipCase

T = TypeVar("T")


def _emit(stream: IO[str], event: dict[str, Any]) -> None:
    stream.write(json.dumps({**event, "pid": os.getpid()}) + "\n")
    stream.flush()


def _error_event(case_id: str, exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, SkipCase):
        return {"event": "error", "case": case_id, "kind": "skipped", "message": str(exc)}
    if isinstance(exc, CheckFailed):
        return {"event": "error", "case": case_id, "kind": "check", "message": str(exc)}
    if isinstance(exc, MemoryError):
        return {"event": "error", "case": case_id, "kind": "oom", "message": "the workload ran out of memory"}
    if isinstance(exc, SystemExit):
        return {
            "event": "error",
            "case": case_id,
            "kind": "raised",
            "message": f"the workload called sys.exit({exc.code!r})",
        }
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    where = f"{os.path.basename(frame.filename)}:{frame.lineno}"
    return {"event": "error", "case": case_id, "kind": "raised", "message": f"{type(exc).__name__}: {exc} (at {where})"}


def _guarded(out: IO[str], case_id: str, step: Callable[[], T]) -> tuple[bool, T | None]:
    """Run one step of a case with the case marked in flight; report an exception as the case's error."""
    _emit(out, {"event": "start", "case": case_id})
    try:
        value = step()
    except (Exception, SystemExit) as exc:  # the workload's failure, reported for this case only
        _emit(out, _error_event(case_id, exc))
        return False, None
    _emit(out, {"event": "idle"})
    return True, value


def _prepare_all(job: dict[str, Any], out: IO[str]) -> list[CaseSession]:
    sessions: list[CaseSession] = []
    for case in job["cases"]:
        ok, session = _guarded(out, case["id"], functools.partial(prepare, case, job))
        if ok and session is not None:
            sessions.append(session)
    return sessions


def _finish_all(sessions: list[CaseSession], out: IO[str]) -> None:
    for s in sessions:
        ok, event = _guarded(out, s.case_id, functools.partial(finish, s))
        if ok and event is not None:
            _emit(out, event)


def run_job(job: dict[str, Any], out: IO[str]) -> None:
    sessions = _prepare_all(job, out)
    slices = max(1, int(job.get("slices", 1)))
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


def run_lockstep(job: dict[str, Any], out: IO[str], commands: IO[str]) -> None:
    """Lockstep mode (A/B pairs): after set-up, sample only when told, one command per line on stdin:
    {"cmd": "sample", "case": id, "n": k, "rewarm": r} -> r untimed calls and k samples, then
    {"event": "sampled", "case": id, "elapsed_s": t};
    {"cmd": "finish"} -> results. The driver alternates two such workers sample by sample, so both revisions
    see the same machine state (perfci/engine/lockstep.py)."""
    sessions = {s.case_id: s for s in _prepare_all(job, out)}
    _emit(out, {"event": "prepared", "cases": list(sessions)})
    gc.disable()
    while line := commands.readline():
        cmd = json.loads(line)
        if cmd["cmd"] == "finish":
            break
        s = sessions.get(cmd["case"])
        if s is None:
            _emit(out, {"event": "sampled", "case": cmd["case"], "elapsed_s": 0.0, "missing": True})
            continue
        take = functools.partial(s.sampler.take, int(cmd.get("n", 1)), int(cmd.get("rewarm", 0)))
        ok, elapsed = _guarded(out, s.case_id, take)
        if not ok:
            del sessions[s.case_id]
        _emit(out, {"event": "sampled", "case": s.case_id, "elapsed_s": elapsed or 0.0, "failed": not ok})
    gc.enable()
    for s in sessions.values():
        s.sampler.stop_reason = "lockstep"
    _finish_all(list(sessions.values()), out)


def _die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL this worker when the process that spawned it dies, even by SIGKILL (a CI runner
    killing the job), so that no worker keeps spinning in a workload call with nobody to time it out. If the
    parent is already gone (it died before the request), exit now."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if parent_pid and os.getppid() != parent_pid:
        os._exit(1)


def main() -> None:
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    job = json.loads(sys.stdin.readline())
    _die_with_parent(int(job.get("parent_pid", 0)))
    if job.get("cpu_affinity"):
        os.sched_setaffinity(0, set(job["cpu_affinity"]))
    _emit(protocol, {"event": "ready"})
    if job.get("lockstep"):
        run_lockstep(job, protocol, sys.stdin)
    else:
        run_job(job, protocol)
    _emit(protocol, {"event": "done"})


if __name__ == "__main__":
    main()
