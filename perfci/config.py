"""Project configuration: `perfci.toml` or `[tool.perfci]` in `pyproject.toml`.

The `Config` dataclass is what the rest of perfci reads; `load_config` finds, parses and validates the file
(unknown key, wrong type, bad pattern, missing path: a ConfigError naming the file and key).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Config:
    source: Path | None = None  # the file it came from; None when no configuration was found
    paths: tuple[Path, ...] = ()  # workload files or folders (relative paths resolved against the file's folder)
    suites: tuple[str, ...] = ()  # built-in or user suites to run by default
    devices: tuple[str, ...] = ()  # devices to run on by default (empty: every device a workload declares)
    # case pattern (fnmatch on the case id, e.g. "kernels.*") -> metric name or family -> practical threshold
    # as a fraction, e.g. {"kernels.*": {"latency": 0.03, "memory": 0.01}}
    thresholds: dict[str, dict[str, float]] = field(default_factory=dict)
    rounds: int | None = None
    case_timeout_s: float | None = None
    budget_s: float | None = None  # per-round sampling budget
    runner: str | None = None  # runner class name (names baselines/<runner>.json)
    build_command: str | None = None  # for `perfci ab`: how to make a checked-out revision importable
