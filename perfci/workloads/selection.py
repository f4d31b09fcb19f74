"""Which cases run: the sources to import (user paths, built-in suites) and the filters over the case ids.

Filters (all must hold): `-k` patterns (any may match; see perfci.patterns for substring, glob and `re:`),
suites (the case's suite: the `suite=` of its workload, else its file stem; built-in suites are named after
their module), and devices (`cuda` also selects `cuda:N`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perfci.errors import WorkloadDefinitionError
from perfci.format.model import CaseSpec
from perfci.patterns import CasePattern, matches_any
from perfci.workloads.discovery import BUILTIN_SUITES, builtin_source, expand_paths
from perfci.workloads.pytest_cases import pytest_source


@dataclass(frozen=True)
class Selection:
    patterns: tuple[CasePattern, ...] = ()
    suites: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()

    def keeps(self, spec: CaseSpec) -> bool:
        if self.patterns and not matches_any(self.patterns, spec.id):
            return False
        if self.suites and spec.suite not in self.suites:
            return False
        return not self.devices or any(device_matches(d, spec.device) for d in self.devices)


def device_matches(wanted: str, device: str) -> bool:
    return device == wanted or (":" not in wanted and device.startswith(f"{wanted}:"))


def plan_sources(paths: Sequence[Path], suites: Sequence[str], pytest: Sequence[Path] = ()) -> list[str]:
    """User files under `paths`, the pytest files or folders `pytest` (their benchmark tests are cases,
    workloads/pytest_cases.py), plus the built-in suites named in `suites`; the default suite when all are
    empty."""
    sources = expand_paths(list(paths))
    for p in pytest:
        if not p.exists():
            raise WorkloadDefinitionError(f"{p}: no such pytest file or folder.")
        sources.append(pytest_source(p))
    sources += [builtin_source(s) for s in suites if s in BUILTIN_SUITES and builtin_source(s) not in sources]
    return sources or [builtin_source("default")]


def select(specs: Sequence[CaseSpec], selection: Selection) -> list[CaseSpec]:
    return [s for s in specs if selection.keeps(s)]


def unknown_suites(specs: Sequence[CaseSpec], suites: Sequence[str]) -> list[str]:
    """Requested suites that no discovered case belongs to."""
    known = {s.suite for s in specs}
    return [s for s in suites if s not in known]
