"""Orchestration: run every case in several rounds of fresh worker processes, interleaved, and collect results.

A round is one worker process that measures the cases still to be measured, in an order shuffled per round (so
drift hits all cases alike). A case that fails (raises, crashes, hangs, exhausts memory) becomes an `error`
result with its reason and is not retried in later rounds; the worker is restarted for the remaining cases.
Partial results are written after every round, so nothing already measured is lost.
"""

from __future__ import annotations

import random
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from perfci.metrics import case_metrics
from perfci.model import CaseError, CaseResult, CaseSpec, CaseStatus, GitInfo, Round, RunResult
from perfci.profilers.fingerprint import fingerprint
from perfci.profilers.timing import TimingSettings
from perfci.schema import dump_results
from perfci.supervisor import Limits, run_worker


def _default_memory_limit() -> int:
    return int(psutil.virtual_memory().total * 0.5)


@dataclass(frozen=True)
class RunSettings:
    rounds: int = 5
    seed: int = 0
    threads: int = 1
    case_timeout_s: float = 120.0
    memory_limit_bytes: int = field(default_factory=_default_memory_limit)
    timing: TimingSettings = field(default_factory=TimingSettings)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


ProgressFn = Callable[[str, int, int], None]  # (message, done, total)


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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


@dataclass
class _CaseState:
    spec: CaseSpec
    rounds: list[Round] = field(default_factory=list)
    errors: list[CaseError] = field(default_factory=list)
    flops: float | None = None
    bytes: float | None = None

    def result(self) -> CaseResult:
        status = CaseStatus.ERROR if self.errors else CaseStatus.OK
        rounds = tuple(self.rounds)
        metrics = case_metrics(rounds, self.flops, self.bytes) if status is CaseStatus.OK else ()
        return CaseResult(self.spec, status, rounds, metrics, tuple(self.errors), self.flops, self.bytes)


def _job_case(spec: CaseSpec) -> dict[str, Any]:
    return {"id": spec.id, "source": spec.source, "workload": spec.workload, "params": spec.params,
            "device": spec.device}


def _round_order(specs: list[CaseSpec], seed: int, index: int) -> list[CaseSpec]:
    order = list(specs)
    random.Random(f"{seed}:{index}").shuffle(order)
    return order


@dataclass
class Runner:
    settings: RunSettings
    out_dir: Path
    progress: ProgressFn | None = None
    worker_env: dict[str, str] | None = None
    worker_python: str | None = None
    states: dict[str, _CaseState] = field(default_factory=dict)

    def run(self, specs: list[CaseSpec]) -> RunResult:
        started = utc_now()
        self.states = {s.id: _CaseState(s) for s in specs}
        fp = fingerprint()
        git = git_info(Path.cwd())
        total = len(specs) * self.settings.rounds
        done = 0
        for index in range(self.settings.rounds):
            todo = [s for s in _round_order(specs, self.settings.seed, index) if not self.states[s.id].errors]
            done += len(specs) - len(todo)
            done = self._run_round(index, todo, done, total)
            self._write(started, fp, git, final=False)
        return self._write(started, fp, git, final=True)

    def _run_round(self, index: int, todo: list[CaseSpec], done: int, total: int) -> int:
        remaining = list(todo)
        attempt = 0
        while remaining:
            job = {
                "cases": [_job_case(s) for s in remaining],
                "round_index": index,
                "seed": self.settings.seed,
                "threads": self.settings.threads,
                "timing": asdict(self.settings.timing),
            }
            finished: list[str] = []

            def on_event(event: dict[str, Any], round_index: int = index) -> None:
                nonlocal done
                kind = event.get("event")
                if kind == "start" and self.progress:
                    self.progress(f"round {round_index + 1}/{self.settings.rounds}: {event['case']}", done, total)
                elif kind in ("result", "error"):
                    self._record(event, round_index)
                    finished.append(event["case"])
                    done += 1
                elif kind == "worker_failed":
                    self._fail_all(remaining, finished, event["message"], round_index)

            limits = Limits(self.settings.case_timeout_s, self.settings.memory_limit_bytes)
            log = self.out_dir / "logs" / f"worker-r{index}-{attempt}.log"
            run_worker(job, limits, log, on_event, env=self.worker_env, python=self.worker_python)
            remaining = [s for s in remaining if s.id not in finished]
            attempt += 1
        return done

    def _fail_all(self, remaining: list[CaseSpec], finished: list[str], message: str, index: int) -> None:
        for s in remaining:
            if s.id not in finished:
                self.states[s.id].errors.append(CaseError("infrastructure", message, index))
                finished.append(s.id)

    def _record(self, event: dict[str, Any], index: int) -> None:
        state = self.states[event["case"]]
        if event["event"] == "error":
            state.errors.append(CaseError(event["kind"], event["message"], index))
            return
        r = event["round"]
        state.rounds.append(Round(index=index, pid=int(event.get("pid", 0)), **{**r, "samples": tuple(r["samples"])}))
        state.flops = event.get("flops")
        state.bytes = event.get("bytes")

    def _write(self, started: str, fp: dict[str, Any], git: GitInfo | None, final: bool) -> RunResult:
        run = RunResult(
            run_id=self.out_dir.name or uuid.uuid4().hex[:12],
            started_at=started,
            finished_at=utc_now(),
            fingerprint=fp,
            git=git,
            settings={**self.settings.as_dict(), "complete": final},
            cases=tuple(st.result() for st in self.states.values()),
        )
        dump_results(run, self.out_dir / "results.json")
        return run
