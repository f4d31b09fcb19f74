"""One resolution of every setting: command-line flag > environment > configuration > default.

The CLI is the only reader of argv and of the process environment; it hands both here (`Settings(env, cfg)`),
and every command asks this object, so that `run`, `compare`, `baseline update` and `history ingest` agree.
The table of settings, their variables, keys and defaults is in docs/settings.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from perfci.compare.baselines import check_runner_name
from perfci.config import Config, load_config
from perfci.cpus import parse_cpu_list, unavailable
from perfci.errors import UsageError
from perfci.metrics.registry import threshold_keys
from perfci.profilers.fingerprint import runner_name
from perfci.store.history import default_url

T = TypeVar("T")

ENV_RUNNER = "PERFCI_RUNNER"
ENV_DB = "PERFCI_DB"
ENV_MEMORY_LIMIT = "PERFCI_MEMORY_LIMIT"

DEFAULT_ROUNDS = 5
DEFAULT_THREADS = 1
DEFAULT_CASE_TIMEOUT_S = 120.0


def load_project_config(path: Path | None = None, start: Path | None = None) -> Config:
    """The project's configuration (perfci.toml or [tool.perfci]), validated against the metric registry."""
    return load_config(path, start, metric_keys=threshold_keys())


def first(*values: T | None) -> T:
    """The first value that is not None (the last one is the default and must not be None)."""
    for v in values:
        if v is not None:
            return v
    raise ValueError("no value and no default")


@dataclass(frozen=True)
class Settings:
    """The environment and configuration a command runs under; each method resolves one setting."""

    env: Mapping[str, str] = field(default_factory=dict)
    cfg: Config = field(default_factory=Config)

    def runner_class(self, flag: str | None, fp: dict[str, Any]) -> str:
        """`--runner` > $PERFCI_RUNNER > config `runner` > derived from the fingerprint."""
        return check_runner_name(first(flag, self.env.get(ENV_RUNNER) or None, self.cfg.runner, runner_name(fp)))

    def store_url(self, flag: str | None, cwd: Path | None = None) -> str:
        """`--db` > $PERFCI_DB > the SQLite file under .perfci/ of the current folder."""
        return first(flag, self.env.get(ENV_DB) or None, default_url(cwd or Path.cwd()))

    def memory_limit(self, flag: str | None) -> str | None:
        """`--memory-limit` > $PERFCI_MEMORY_LIMIT (default: the engine's, half of RAM)."""
        return flag if flag is not None else (self.env.get(ENV_MEMORY_LIMIT) or None)

    def rounds(self, flag: int | None) -> int:
        return first(flag, self.cfg.rounds, DEFAULT_ROUNDS)

    def threads(self, flag: int | None) -> int:
        return first(flag, self.cfg.threads, DEFAULT_THREADS)

    def case_timeout_s(self, flag: float | None) -> float:
        return first(flag, self.cfg.case_timeout_s, DEFAULT_CASE_TIMEOUT_S)

    def budget_s(self, flag: float | None, default: float) -> float:
        return first(flag, self.cfg.budget_s, default)

    def speed_reference(self, flag: bool | None) -> bool:
        return first(flag, self.cfg.speed_reference, False)

    def devices(self, flag: list[str] | None) -> tuple[str, ...]:
        """`--device` > config `devices` > () (every device present)."""
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
