"""Orchestration: run every case in several rounds of fresh worker processes, interleaved, and collect results.

A round is one worker process that measures the cases still to be measured, in an order shuffled per round (so
drift hits all cases alike). A case that fails (raises, crashes, hangs, exhausts memory) becomes an `error`
result with its reason and is not retried in later rounds; the worker is restarted for the remaining cases.
Partial results are written after every round, so nothing already measured is lost.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import subprocess
import sys
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import psutil

from perfci.engine import WORKER_UNSET_VAR
from perfci.engine.preload import TORCH, cached_imports, imports_key, keep_imports, write_list
from perfci.engine.progress import ProgressFn, RoundStarted
from perfci.engine.protocol import (
    HEAP_PAD_VAR,
    PRELOAD_VAR,
    Error,
    ErrorKind,
    Event,
    Job,
    JobCase,
    Result,
    Start,
    WorkerFailed,
)
from perfci.engine.resume import RESUMED_KEY, resume_note, rounds_in
from perfci.engine.supervisor import Limits, WorkerProcess, discard, run_worker, spawn_worker
from perfci.format.model import CaseError, CaseResult, CaseSpec, CaseStatus, GitInfo, Round, RunResult
from perfci.format.schema import dump_results
from perfci.metrics import case_metrics
from perfci.options import CASE_TIMEOUT, ROUNDS, SEED, THREADS
from perfci.profilers.device_time import STEADY_DEVICE, rests_on_device
from perfci.profilers.fingerprint import fingerprint
from perfci.profilers.peaks import cache_key, load_cached, store_cached
from perfci.profilers.timing import TimingSettings
from perfci.work_folder import cache_dir

WORKER_RETRIES = 1  # a worker that dies between cases is replaced this many times a round


def _default_memory_limit() -> int:
    return int(psutil.virtual_memory().total * 0.5)


# glibc malloc with fixed thresholds in every worker (docs/measurement.md, A/A section, "Page faults"): allocations
# up to 32 MiB come from a heap that is never trimmed, so whether a timed call page-faults does not depend on the
# allocation history of the process (measured: two 4 MB softmax outputs per step page-faulted on every call, 2.6x
# slower, in 8 of 8 processes with the default thresholds, in 0 of 8 with these). An existing GLIBC_TUNABLES wins.
MALLOC_TUNABLES = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296"


@dataclass(frozen=True)
class RunSettings:
    rounds: int = ROUNDS.default
    seed: int = SEED.default
    threads: int = THREADS.default
    case_timeout_s: float = CASE_TIMEOUT.default
    memory_limit_bytes: int = field(default_factory=_default_memory_limit)
    timing: TimingSettings = field(default_factory=TimingSettings)
    cpu_affinity: tuple[int, ...] | None = None  # CPUs the workers are pinned to (None: not pinned)
    slices: int = 3  # a round samples its cases in this many interleaved slices (see perfci/engine/worker.py)
    malloc_tunables: str | None = MALLOC_TUNABLES  # GLIBC_TUNABLES for the workers; None: leave malloc alone
    # where measured runner peaks are cached; None: do not measure peaks
    peaks_cache: Path | None = field(default_factory=cache_dir)
    # False: take the runner's peaks from the cache only, never measure them (`perfci ab`: they decide nothing)
    measure_peaks: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}


WORKER_LOG_PREFIX = "worker-"  # logs/worker-r<round>-<attempt or side>.log: each worker's stderr


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_run_id() -> str:
    """Unique per run, whatever the output folder is called (CI jobs reuse one name, e.g. `--out perfci-out`,
    and the history store tells runs apart by their id): start time to the second plus 6 random hex digits."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"


def git_info(cwd: Path) -> GitInfo | None:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip()

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None
    branch = git("rev-parse", "--abbrev-ref", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return GitInfo(commit=commit, branch=branch, dirty=bool(status) if status is not None else None)


NOT_MEASURED = "not measured: perfci ab reads the runner's peaks from its cache only (perfci run measures them once)"


def runner_peaks(
    fp: dict[str, Any],
    device: str,
    threads: int,
    cache: Path,
    env: dict[str, str],
    python: str | None,
    measure: bool = True,
) -> dict[str, Any]:
    """The runner's measured peaks for `device`: from the cache, or measured once in a subprocess (where
    `measure`; otherwise a note that they are not known)."""
    key = cache_key(fp, device, threads)
    cached = load_cached(cache, key)
    if cached is not None:
        return {**cached, "cached": True}
    if not measure:
        return {"note": NOT_MEASURED}
    cmd = [python or sys.executable, "-m", "perfci.profilers.peaks", device, str(threads)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, check=True)
        peaks: dict[str, Any] = json.loads(out.stdout)
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as exc:
        return {"error": f"peak calibration failed: {exc}"}
    store_cached(cache, key, peaks)
    return {**peaks, "cached": False}


@dataclass
class _CaseState:
    spec: CaseSpec
    rounds: list[Round] = field(default_factory=list)
    errors: list[CaseError] = field(default_factory=list)
    flops: float | None = None
    bytes: float | None = None

    def has_round(self, index: int) -> bool:
        return any(r.index == index for r in self.rounds)

    def result(self, peaks: dict[str, Any] | None = None) -> CaseResult:
        if self.errors and all(e.kind == "skipped" for e in self.errors):
            status = CaseStatus.SKIPPED
        else:
            status = CaseStatus.ERROR if self.errors else CaseStatus.OK
        rounds = tuple(self.rounds)
        metrics = case_metrics(rounds, self.flops, self.bytes, peaks) if status is CaseStatus.OK else ()
        return CaseResult.of(self.spec, status, rounds, metrics, tuple(self.errors), self.flops, self.bytes)


def _job_case(spec: CaseSpec, steady_clock: str = "") -> JobCase:
    return JobCase(
        id=spec.id,
        source=spec.source,
        workload=spec.workload,
        params=spec.params,
        device=spec.device,
        steady_clock=steady_clock,
    )


def _round_order(specs: list[CaseSpec], seed: int, index: int) -> list[CaseSpec]:
    order = list(specs)
    random.Random(f"{seed}:{index}").shuffle(order)
    return order


@dataclass
class Runner:
    """Runs rounds of cases in worker processes. `run` does a whole run; `start`/`run_round`/`finish` let an
    orchestrator (e.g. A/B of two revisions) interleave the rounds of several runners."""

    settings: RunSettings
    out_dir: Path
    progress: ProgressFn | None = None
    worker_env: dict[str, str] | None = None
    worker_python: str | None = None
    worker_fingerprint: dict[str, Any] | None = None  # the workers' interpreter's, when it is not this one's
    # written into the results' settings beside `settings` (e.g. the workloads' content hash, engine/resume.py)
    extra_settings: dict[str, Any] = field(default_factory=dict)
    # the checkout whose git state (commit, branch, dirty) the results record: an A/B side's own (its worktree, or
    # the working tree); None: the current folder's
    git_root: Path | None = None
    states: dict[str, _CaseState] = field(default_factory=dict)
    done: int = 0
    total: int = 0
    _header: tuple[str, dict[str, Any], GitInfo | None] | None = None
    _run_id: str = ""
    _spares: dict[tuple[int, str], subprocess.Popen[bytes]] = field(default_factory=dict)
    learned: tuple[str, ...] = ()  # the library modules the first lockstep pair's set-ups imported (preload.py)
    _cached: tuple[str, ...] | None = None  # those a previous run of the same workloads learned (read once)
    started_ahead: int = 0  # lockstep workers that were started ahead (`prestart`) and used
    _worker_failed: str | None = None  # why the last worker of a round died between cases (None: it did not)

    def run(self, specs: list[CaseSpec], resume_from: RunResult | None = None) -> RunResult:
        """The whole run; with `resume_from` (an interrupted run of the same cases and settings, checked by
        engine/resume.py), only the rounds it lacks are measured."""
        if resume_from is None:
            self.start(specs)
        else:
            self.resume(specs, resume_from)
        for index in range(self.settings.rounds):
            self.run_round(index)
        return self.finish()

    def start(self, specs: list[CaseSpec], rounds: int | None = None) -> None:
        """A new run (not a resumed one): the worker logs an earlier run left in the same folder are removed, so
        that `logs/` holds this run's alone (`resume` keeps them: the rounds they logged are kept too)."""
        self.clear_worker_logs()
        self.states = {s.id: _CaseState(s) for s in specs}
        self.done, self.total = 0, len(specs) * (rounds or self.settings.rounds)
        fp = dict(self.worker_fingerprint) if self.worker_fingerprint is not None else fingerprint()
        if (st := self.settings).peaks_cache is not None:
            devices = sorted({s.device.split(":")[0] for s in specs})
            fp["peaks"] = {
                d: runner_peaks(fp, d, st.threads, st.peaks_cache, self._env(), self.worker_python, st.measure_peaks)
                for d in devices
            }
        self._header = (utc_now(), fp, git_info(self.git_root if self.git_root is not None else Path.cwd()))
        self._run_id = new_run_id()

    def resume(self, specs: list[CaseSpec], partial: RunResult) -> None:
        """Continue `partial`: its run id, start, fingerprint (with the runner peaks) and git are kept, and so are
        its cases' rounds and errors, in its case order (which the round order is shuffled from)."""
        by_id = {s.id: s for s in specs}
        self.states = {
            c.spec.id: _CaseState(by_id[c.spec.id], list(c.rounds), list(c.errors), c.flops, c.bytes)
            for c in partial.cases
        }
        self.done = rounds_in(partial)
        self.total = len(self.states) * self.settings.rounds
        self._header = (partial.started_at, dict(partial.fingerprint), partial.git)
        self._run_id = partial.run_id
        if partial.settings.get("complete") is False:
            self.extra_settings = {**self.extra_settings, RESUMED_KEY: resume_note(partial, utc_now())}
        elif RESUMED_KEY in partial.settings:
            self.extra_settings = {**self.extra_settings, RESUMED_KEY: partial.settings[RESUMED_KEY]}

    def todo(self, index: int, only: list[str] | None = None) -> list[CaseSpec]:
        """The still-healthy cases of round `index` (or those of them in `only`) that lack that round (a resumed
        run has some), in the round's shuffled order."""
        specs = [st.spec for st in self.states.values() if only is None or st.spec.id in only]
        order = _round_order(specs, self.settings.seed, index)
        return [s for s in order if not self.states[s.id].errors and not self.states[s.id].has_round(index)]

    def lockstep_worker(self, todo: list[CaseSpec], index: int, finished: list[str], tag: str) -> WorkerProcess:
        """A worker in lockstep mode for `todo` (see perfci/engine/lockstep.py); its events are recorded here. A
        spare started ahead for this pair (`prestart`) is used when there is one."""
        handler = functools.partial(self._on_event, index=index, remaining=todo, finished=finished)
        job = msgspec.structs.replace(self._job(todo, index, lockstep=True), cpu_affinity=self.lockstep_cpus())
        spare = self._spares.pop((index, tag), None)
        self.started_ahead += spare is not None and spare.poll() is None
        log, env = self._lockstep_log(index, tag), self._lockstep_env(index, tag)
        return WorkerProcess(job, self._limits(), log, handler, env, self.worker_python, spawned=spare)

    def prestart(self, index: int, tag: str) -> None:
        """Start the worker process of lockstep pair `index` now, before its job is known: the interpreter starts
        and (for CUDA cases) imports torch while the previous pair finishes and is analysed, then waits for its
        job on stdin (perfci/engine/worker.py). It touches no device and measures nothing until then."""
        if (index, tag) not in self._spares:
            spare = spawn_worker(self._lockstep_log(index, tag), self._lockstep_env(index, tag), self.worker_python)
            self.move_off_pair_cpus(spare.pid)  # it moves onto them itself once set up (worker._pin)
            self._spares[(index, tag)] = spare

    def move_off_pair_cpus(self, pid: int) -> None:
        """Move process `pid` (its main thread) off the CPUs the lockstep pairs sample on, where others exist: a
        spare while it imports, a worker reading its results while the next pair samples."""
        others = set(os.sched_getaffinity(0)) - set(self.lockstep_cpus())
        if others:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(pid, others)

    def learn_imports(self, imported: tuple[str, ...]) -> None:
        """Keep the library modules a lockstep worker's set-ups imported (the first pair's): the spares started
        for later pairs import them while they wait (engine/preload.py)."""
        if imported and not self.learned:
            self.learned = imported
            if self.settings.peaks_cache is not None:
                keep_imports(self.settings.peaks_cache, self._imports_key(), imported)

    def _imports_key(self) -> str:
        return imports_key(self.worker_python or sys.executable, (st.spec.workload for st in self.states.values()))

    def _preload_names(self) -> tuple[str, ...]:
        """What a GPU lockstep worker imports ahead: the first pair's learned modules, else those a previous
        run of the same workloads learned (engine/preload.py), else torch alone (empty)."""
        if self.learned or self.settings.peaks_cache is None:
            return self.learned
        if self._cached is None:
            self._cached = cached_imports(self.settings.peaks_cache, self._imports_key())
        return self._cached

    def _preload_file(self) -> Path:
        return self.out_dir / "logs" / "preload.txt"

    def discard_spares(self) -> None:
        """Stop the spare workers that were started ahead but not needed (no further pair)."""
        while self._spares:
            discard(self._spares.popitem()[1])

    def clear_worker_logs(self) -> None:
        """Remove the worker logs (`logs/worker-*.log`) of an earlier run into this folder; other files stay."""
        folder = self.out_dir / "logs"
        if folder.is_dir():
            for log in folder.glob(f"{WORKER_LOG_PREFIX}*.log"):
                log.unlink(missing_ok=True)

    def _lockstep_log(self, index: int, tag: str) -> Path:
        return self.out_dir / "logs" / f"{WORKER_LOG_PREFIX}r{index}-{tag}.log"

    def _lockstep_env(self, index: int, tag: str) -> dict[str, str]:
        env = self._env(pad_key=f"{index}:{tag}:{self.out_dir.name}")
        if self.uses_gpu():  # worker.py imports these while it waits for its job (engine/preload.py)
            names = self._preload_names()
            env[PRELOAD_VAR] = write_list(self._preload_file(), names) if names else TORCH
        return env

    def uses_gpu(self) -> bool:
        """Whether any of the run's cases runs on a CUDA device."""
        return any(st.spec.device.startswith("cuda") for st in self.states.values())

    def lockstep_cpus(self) -> tuple[int, ...]:
        """Both workers of a lockstep pair run on the same CPUs (they never run at once), so neither gets the
        faster core or the one the driver runs on: the configured affinity, else the last `threads` CPUs."""
        if self.settings.cpu_affinity:
            return self.settings.cpu_affinity
        cpus = sorted(os.sched_getaffinity(0))
        want = self.settings.threads or len(cpus)
        return tuple(cpus[-want:])

    def has_rounds(self) -> bool:
        """Whether any case has a measured round (the first pair is over, or an interrupted run was resumed)."""
        return any(st.rounds for st in self.states.values())

    def worker_footprint(self) -> tuple[int | None, int | None, int | None]:
        """What one worker of this runner needs, from the rounds so far: the most host memory a round's process
        held (its peak resident set), the most GPU memory (NVML's figure for the process, context included,
        else torch's peak allocation), and the GPU's total memory from the fingerprint; None where unknown."""
        rounds = [r for st in self.states.values() for r in st.rounds]
        host = max((r.peak_rss_bytes for r in rounds if r.peak_rss_bytes), default=None)
        nvml = [v for r in rounds if isinstance(v := r.telemetry.get("nvml_process_bytes"), int | float)]
        device = max(nvml, default=None) or max(
            (r.peak_device_bytes for r in rounds if r.peak_device_bytes), default=None
        )
        gpus = self._header[1].get("gpus") if self._header is not None else None
        total = (
            gpus[0].get("memory_total_bytes") if isinstance(gpus, list) and gpus and isinstance(gpus[0], dict) else None
        )
        return host, (int(device) if device else None), (int(total) if total else None)

    def record_error(self, case_id: str, kind: ErrorKind, message: str, index: int, finished: list[str]) -> None:
        self._on_event(Error(case_id, kind, message), index, [], finished)

    def run_round(self, index: int, only: list[str] | None = None) -> None:
        """One round: the still-healthy cases (or those in `only`), in an order shuffled per round."""
        todo = self.todo(index, only)
        attempt = failures = 0
        while todo:
            finished: list[str] = []
            handler = functools.partial(self._on_event, index=index, remaining=todo, finished=finished)
            log = self.out_dir / "logs" / f"{WORKER_LOG_PREFIX}r{index}-{attempt}.log"
            env = self._env(pad_key=f"{index}:{attempt}:{self.out_dir.name}")
            self._worker_failed = None
            run_worker(self._job(todo, index), self._limits(), log, handler, env=env, python=self.worker_python)
            todo = [s for s in todo if s.id not in finished]
            if not finished and self._worker_failed is None:  # never loop on a worker that ends doing nothing
                self._worker_failed = "the worker ended without measuring any case"
            if self._worker_failed is not None:  # it died between cases: no case's fault, so a new worker tries
                failures += 1  # (one killed as it started failed every case of the run); twice is no hiccup
                if failures > WORKER_RETRIES:
                    for s in todo:
                        self.states[s.id].errors.append(CaseError("infrastructure", self._worker_failed, index))
                    todo = []
            attempt += 1
        self._write(final=False)

    def finish(self) -> RunResult:
        return self._write(final=True)

    def write_partial(self) -> None:
        self._write(final=False)

    def steady_clock(self, case_id: str, lockstep: bool = False) -> str:
        """ "device" when the case's earlier rounds say its verdict rests on its device clock (a lockstep A/B
        settles a CUDA case on it; a launch-bound case's latency follows the host): its later rounds profile more
        calls and take fewer latency samples (profilers/device_time.rests_on_device); "" otherwise."""
        state = self.states.get(case_id)
        return STEADY_DEVICE if state is not None and rests_on_device(state.rounds, lockstep) else ""

    def _job(self, todo: list[CaseSpec], index: int, lockstep: bool = False) -> Job:
        return Job(
            cases=tuple(_job_case(s, self.steady_clock(s.id, lockstep)) for s in todo),
            round_index=index,
            seed=self.settings.seed,
            threads=self.settings.threads,
            timing=asdict(self.settings.timing),
            cpu_affinity=self.settings.cpu_affinity or None,
            slices=self.settings.slices,
        )

    def _limits(self) -> Limits:
        return Limits(self.settings.case_timeout_s, self.settings.memory_limit_bytes)

    def _on_event(self, event: Event, index: int, remaining: list[CaseSpec], finished: list[str]) -> None:
        if isinstance(event, Start) and self.progress:
            self.progress(RoundStarted(event.case, index + 1, self.done, self.total))
        elif isinstance(event, (Result, Error)):
            self._record(event, index)
            finished.append(event.case)
            self.done += 1
        elif isinstance(event, WorkerFailed):  # `run_round` retries the cases left, then gives up on them
            self._worker_failed = event.message

    def _env(self, pad_key: str | None = None) -> dict[str, str]:
        """The worker's environment. With `pad_key`, a variable of pseudo-random length (0-4095, seeded by the
        key) is added: the size of the environment shifts the initial stack alignment, a known cause of
        consistent few-percent differences between otherwise identical processes; varying it per worker turns
        that bias into noise that the rounds measure (two revisions with different PYTHONPATHs would otherwise
        differ by it for ever). The same draw gives the worker a heap offset (`HEAP_PAD_VAR`)."""
        env = dict(self.worker_env if self.worker_env is not None else os.environ)
        for var in env.pop(WORKER_UNSET_VAR, "").split(","):
            env.pop(var, None)  # set by the parent for itself only (the CLI's single-threaded BLAS)
        if self.settings.threads > 0:
            for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
                env[var] = str(self.settings.threads)
        if self.settings.malloc_tunables and "GLIBC_TUNABLES" not in env:
            env["GLIBC_TUNABLES"] = self.settings.malloc_tunables
        if pad_key is not None:
            draw = random.Random(f"{self.settings.seed}:{pad_key}")
            env["PERFCI_ENV_PAD"] = "x" * draw.randrange(4096)
            env[HEAP_PAD_VAR] = str(draw.randrange(65_536))  # worker.shift_heap: a fresh heap offset per worker
        return env

    def _record(self, event: Result | Error, index: int) -> None:
        state = self.states[event.case]
        if isinstance(event, Error):
            state.errors.append(CaseError(event.kind, event.message, index))
            return
        state.rounds.append(event.round(index))
        state.flops = event.flops
        state.bytes = event.bytes

    def _write(self, final: bool) -> RunResult:
        if self._header is None:
            raise RuntimeError("Runner.start() was not called")
        started, fp, git = self._header
        run = RunResult(
            run_id=self._run_id,
            started_at=started,
            finished_at=utc_now(),
            fingerprint=fp,
            git=git,
            settings={**self.settings.as_dict(), **self.extra_settings, "complete": final},
            cases=tuple(
                st.result(fp.get("peaks", {}).get(st.spec.device.split(":")[0])) for st in self.states.values()
            ),
        )
        dump_results(run, self.out_dir / "results.json")
        return run
