"""The library API under the CLI, for Python users and CI scripts: select cases, run, compare files, A/B two
revisions, accept baselines, read the history. Each call takes a `Settings` (environment and configuration,
resolved once: flag > environment > configuration > default) and returns an outcome object; nothing here
prints or exits.

    from perfci.api import Settings, RunRequest, run, load_project_config
    outcome = run(Settings(env={}, cfg=load_project_config()), RunRequest(suites=["kernels"]), env={})
    print(outcome.exit_code(), outcome.out_dir)
"""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perfci.api.ab import ABRequest, ABResult, Sources, ab
    from perfci.api.baseline import accept_baseline, describe_baseline
    from perfci.api.compare import CompareOutcome, CompareRequest, DecisionOptions, Outputs, compare_files
    from perfci.api.history import TrendQuery, ingest, noise_estimates, trend_view
    from perfci.api.run import RunOutcome, RunRequest, run
    from perfci.api.select import CaseChoice, select_cases
    from perfci.api.settings import Settings, load_project_config
    from perfci.compare.gate import ExitCode, gate

# name -> module: each submodule is imported on first use, so that `perfci compare` does not import the
# history store (SQLAlchemy), the engine or the workloads (numpy) (docs/scale.md)
_WHERE = {
    "ABRequest": "perfci.api.ab",
    "ABResult": "perfci.api.ab",
    "Sources": "perfci.api.ab",
    "ab": "perfci.api.ab",
    "accept_baseline": "perfci.api.baseline",
    "describe_baseline": "perfci.api.baseline",
    "CompareOutcome": "perfci.api.compare",
    "CompareRequest": "perfci.api.compare",
    "DecisionOptions": "perfci.api.compare",
    "Outputs": "perfci.api.compare",
    "compare_files": "perfci.api.compare",
    "TrendQuery": "perfci.api.history",
    "ingest": "perfci.api.history",
    "noise_estimates": "perfci.api.history",
    "trend_view": "perfci.api.history",
    "RunOutcome": "perfci.api.run",
    "RunRequest": "perfci.api.run",
    "run": "perfci.api.run",
    "CaseChoice": "perfci.api.select",
    "select_cases": "perfci.api.select",
    "Settings": "perfci.api.settings",
    "load_project_config": "perfci.api.settings",
    "ExitCode": "perfci.compare.gate",
    "gate": "perfci.compare.gate",
}

__all__ = [
    "ABRequest",
    "ABResult",
    "CaseChoice",
    "CompareOutcome",
    "CompareRequest",
    "DecisionOptions",
    "ExitCode",
    "Outputs",
    "RunOutcome",
    "RunRequest",
    "Settings",
    "Sources",
    "TrendQuery",
    "ab",
    "accept_baseline",
    "compare_files",
    "describe_baseline",
    "gate",
    "ingest",
    "load_project_config",
    "noise_estimates",
    "run",
    "select_cases",
    "trend_view",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'perfci.api' has no attribute {name!r}")
    return getattr(import_module(module), name)


class _Package(ModuleType):
    """The import system binds each submodule on its package as it is imported; `perfci.api.run` and
    `perfci.api.ab` stay the functions, as they were when this package imported them at once."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _WHERE and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
