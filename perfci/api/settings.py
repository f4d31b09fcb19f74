"""One resolution of every setting: command-line flag > environment > configuration > default.

The CLI is the only reader of argv and of the process environment; it hands both here (`Settings(env, cfg)`),
and every command asks this object, so that `run`, `compare`, `baseline update` and `history ingest` agree.
Each setting's flag, variable, key, default and bounds is a row of the options table (perfci/options.py), shown in
docs/settings.md; `Settings.resolve` is the one rule for the rows that have no method of their own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from perfci.api.sizes import memory_limit_bytes, parse_size
from perfci.compare.baselines import check_runner_name
from perfci.config import DEVICE_RE, Config, load_config
from perfci.cpus import parse_cpu_list, unavailable
from perfci.errors import UsageError
from perfci.metrics.registry import absolute_threshold_keys, threshold_keys
from perfci.options import (
    CASE_TIMEOUT,
    DB,
    FAIL_ON,
    GPU_MODE,
    MEMORY_LIMIT,
    RANK,
    ROUND_TIME,
    ROUNDS,
    RUNNER,
    SPEED_REFERENCE,
    THREADS,
    THRESHOLD,
    Option,
    resolve,
)
from perfci.profilers.fingerprint import runner_name
from perfci.reports.decisions import DecisionView

T = TypeVar("T")

ENV_RUNNER = RUNNER.env or ""
ENV_DB = DB.env or ""
ENV_MEMORY_LIMIT = MEMORY_LIMIT.env or ""
# GitHub Actions' own variables, read by `perfci ci` (docs/ci.md)
ENV_GITHUB_ACTIONS = "GITHUB_ACTIONS"
ENV_GITHUB_EVENT_NAME = "GITHUB_EVENT_NAME"
ENV_GITHUB_BASE_REF = "GITHUB_BASE_REF"
ENV_GITHUB_EVENT_PATH = "GITHUB_EVENT_PATH"
PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target", "merge_group")
ENV_GITHUB_STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
ENV_GITHUB_OUTPUT = "GITHUB_OUTPUT"


def load_project_config(path: Path | None = None, start: Path | None = None) -> Config:
    """The project's configuration (perfci.toml or [tool.perfci]), validated against the metric registry."""
    return load_config(path, start, metric_keys=threshold_keys(), absolute_keys=absolute_threshold_keys())


def first(*values: T | None) -> T:
    """The first value that is not None (the last one is the default and must not be None)."""
    for v in values:
        if v is not None:
            return v
    raise ValueError("no value and no default")


@dataclass(frozen=True)
class CIEnvironment:
    """Where `perfci ci` runs: GitHub Actions (and which event) or not, and where its summary and outputs go."""

    github: bool = False
    event: str | None = None  # pull_request, push, schedule, ...
    base_ref: str | None = None  # a pull request's base branch
    step_summary: Path | None = None
    output: Path | None = None
    event_problem: str | None = None  # why the event payload (GITHUB_EVENT_PATH) gave no base: unreadable, not JSON

    def no_base_reason(self) -> str:
        """Why no base revision is known, for the error that says so."""
        payload = self.event_problem or "no base in the event payload"
        return f"no GITHUB_BASE_REF, {payload}"


def _read_event(path: Path) -> tuple[Any, str | None]:
    """The GitHub event payload, or None and why it could not be read or parsed (then no base is known from it)."""
    try:
        return json.loads(path.read_bytes()), None
    except OSError as exc:
        return None, f"the event payload {path} cannot be read ({exc.strerror or exc})"
    except (ValueError, RecursionError):
        return None, f"the event payload {path} is not a JSON document"


def event_base(event: str, payload: Any) -> str | None:
    """A pull request's or merge group's base from the event payload, where GITHUB_BASE_REF is not set: GitHub sets
    that variable for pull requests only, so a merge-queue run (`merge_group`) fell back to a baseline run that
    passed with nothing to compare. A merge group's base commit, else a pull request's base branch."""
    if not isinstance(payload, dict):
        return None
    if event == "merge_group":
        group = payload.get("merge_group")
        sha = group.get("base_sha") if isinstance(group, dict) else None
        return sha if isinstance(sha, str) and sha else None
    pull = payload.get("pull_request")
    base = pull.get("base") if isinstance(pull, dict) else None
    ref = base.get("ref") if isinstance(base, dict) else None
    return ref if isinstance(ref, str) and ref else None


@dataclass(frozen=True)
class Settings:
    """The environment and configuration a command runs under; each method resolves one setting."""

    env: Mapping[str, str] = field(default_factory=dict)
    cfg: Config = field(default_factory=Config)

    def runner_class(self, flag: str | None, fp: dict[str, Any]) -> str:
        """`--runner` > $PERFCI_RUNNER > config `runner` > derived from the fingerprint; a bad name is refused
        naming where it came from."""
        given = (("--runner", flag), (f"${ENV_RUNNER}", self.env.get(ENV_RUNNER) or None),
                 (f"{self.cfg.source}: key runner", self.cfg.runner))  # fmt: skip
        for where, name in given:
            if name is not None:
                try:
                    return check_runner_name(name)
                except UsageError as exc:
                    raise UsageError(f"{where}: {exc.message}", hint=exc.hint) from None
        return check_runner_name(runner_name(fp))

    def store_url(self, flag: str | None, cwd: Path | None = None) -> str:
        """`--db` > $PERFCI_DB > the SQLite file under .perfci/ of the current folder."""
        from perfci.store.history import check_url, default_url, in_memory  # here: the store imports SQLAlchemy

        url = first(flag, self.env.get(ENV_DB) or None, default_url(cwd or Path.cwd()))
        if in_memory(url):  # `history ingest --db sqlite://` said "ingested 1 run(s)" and kept nothing
            raise UsageError(f"{url!r} is an in-memory database: it keeps nothing.", hint="e.g. sqlite:///history.db")
        check_url(url)  # its form, before a gate measures anything to store there
        return url

    def memory_limit(self, flag: str | None) -> int | None:
        """`--memory-limit` > $PERFCI_MEMORY_LIMIT, in bytes (None: the engine's default, half of RAM); an error
        names which of the two gave the value."""
        if flag is not None:
            return memory_limit_bytes(flag)
        text = self.env.get(ENV_MEMORY_LIMIT) or None
        return memory_limit_bytes(text, f"${ENV_MEMORY_LIMIT}") if text is not None else None

    def resolve(self, option: Option, flag: Any) -> Any:
        """`flag` > the option's environment variable > its configuration key > its default, held to the
        option's bounds whichever of them it came from (perfci/options.py); UsageError otherwise."""
        configured = getattr(self.cfg, option.config) if option.config else None
        try:
            return resolve(option, flag, self.env, configured, self.cfg.source)
        except ValueError as exc:
            raise UsageError(str(exc)) from None

    def decisions(self, rank: str | None, max_memory: str | None) -> DecisionView:
        """`--rank` and `--max-memory` of the decision tables (reports/decisions.py)."""
        limit = float(parse_size(max_memory)) if max_memory is not None else None
        return DecisionView(str(self.resolve(RANK, rank)), limit)

    def rounds(self, flag: int | None) -> int:
        return int(self.resolve(ROUNDS, flag))

    def threads(self, flag: int | None) -> int:
        return int(self.resolve(THREADS, flag))

    def case_timeout_s(self, flag: float | None) -> float:
        return float(self.resolve(CASE_TIMEOUT, flag))

    def round_time_s(self, flag: float | None) -> float:
        """The sampling time per case and round (`--round-time`, config `round_time_s`)."""
        return float(self.resolve(ROUND_TIME, flag))

    def threshold(self, flag: float | None) -> float | None:
        """`--threshold` > config `threshold` > None (then the configured `thresholds`, then the built-in ones)."""
        value = self.resolve(THRESHOLD, flag)
        return None if value is None else float(value)

    def speed_reference(self, flag: bool | None) -> bool:
        return bool(first(flag, self.cfg.speed_reference, SPEED_REFERENCE.default))

    def gpu_mode(self, flag: str | None) -> str:
        """`--gpu-mode` > config `gpu_mode` > hot: how CUDA cases are timed (a workload's own choice still wins)."""
        mode: str = first(flag, self.cfg.gpu_mode, GPU_MODE.default)
        from perfci.profilers.cuda_timing import MODES as GPU_MODES  # here: the timing modules are not light

        if mode not in GPU_MODES:
            where = "--gpu-mode" if flag is not None else f"{self.cfg.source}: key gpu_mode"
            raise UsageError(f"{where}: unknown GPU timing mode {mode!r}.", hint=f"use one of {', '.join(GPU_MODES)}")
        return mode

    def fail_on(self, flag: str | None) -> str:
        """`--fail-on` > config `fail_on` > regression: what fails the gate ("slower": also the established
        slowdowns below the threshold)."""
        value: str = first(flag, self.cfg.fail_on, FAIL_ON.default)
        if value not in FAIL_ON.choices:
            where = "--fail-on" if flag is not None else f"{self.cfg.source}: key fail_on"
            raise UsageError(f"{where}: unknown value {value!r}.", hint=f"use one of {', '.join(FAIL_ON.choices)}")
        return value

    def devices(self, flag: list[str] | None) -> tuple[str, ...]:
        """`--device` > config `devices` > () (every device present). A device perfci cannot run a case on
        (`--device tpu`, `--device gpu`) is refused, not taken as a filter that matches nothing."""
        for d in flag or ():
            if not DEVICE_RE.match(d):
                raise UsageError(f"--device {d}: not a device perfci runs cases on; use cpu, cuda or cuda:N.")
        return tuple(flag) if flag else self.cfg.devices

    def suites(self, flag: list[str] | None) -> tuple[str, ...]:
        return tuple(flag) if flag else self.cfg.suites

    def paths(self, flag: list[Path] | None) -> list[Path]:
        return list(flag) if flag else list(self.cfg.paths)

    def build_command(self, flag: str | None) -> str | None:
        return flag if flag is not None else self.cfg.build_command

    def history_noise(self, flag: bool | None, job_noise: float | None = None) -> bool:
        """`--history-noise/--no-history-noise` > config `history_noise` > off; an explicit `--job-noise` beats a
        configured history_noise and conflicts with the flag."""
        if flag and job_noise is not None:
            raise UsageError("give --job-noise or --history-noise, not both.")
        return flag if flag is not None else bool(self.cfg.history_noise) and job_noise is None

    def cpus(self, flag: str | None) -> tuple[int, ...] | None:
        """`--cpus` > config `cpus` > not pinned; each CPU must be available to this process."""
        if flag is not None:
            try:
                cpus: tuple[int, ...] | None = parse_cpu_list(flag)
            except ValueError as exc:
                raise UsageError(f"--cpus: {exc}.") from None
        else:
            cpus = self.cfg.cpus
        if cpus is not None and (problem := unavailable(cpus, os.sched_getaffinity(0))):
            raise UsageError(f"{'--cpus' if flag is not None else f'{self.cfg.source}: key cpus'}: {problem}.")
        return cpus

    def ci_environment(
        self, base: str | None = None, step_summary: Path | None = None, output: Path | None = None
    ) -> CIEnvironment:
        """`perfci ci`: flags > GitHub Actions' variables (empty means unset)."""
        github = self.env.get(ENV_GITHUB_ACTIONS) == "true"
        summary = step_summary or (Path(v) if (v := self.env.get(ENV_GITHUB_STEP_SUMMARY)) else None)
        out = output or (Path(v) if (v := self.env.get(ENV_GITHUB_OUTPUT)) else None)
        event = self.env.get(ENV_GITHUB_EVENT_NAME) or None
        base = base or self.env.get(ENV_GITHUB_BASE_REF) or None
        problem = None
        if base is None and event in PULL_REQUEST_EVENTS:
            if path := self.env.get(ENV_GITHUB_EVENT_PATH):
                payload, problem = _read_event(Path(path))
                base = event_base(event, payload)
            else:
                problem = "no GITHUB_EVENT_PATH (the event payload)"
        return CIEnvironment(github, event, base, summary, out, problem)

    def store_configured(self, flag: str | None) -> bool:
        """A history store was named (`--db` or $PERFCI_DB), not just the default file."""
        return bool(flag or self.env.get(ENV_DB))
