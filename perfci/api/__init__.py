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
    from perfci.api.ab import ABRequest as ABRequest
    from perfci.api.ab import ABResult as ABResult
    from perfci.api.ab import Sources as Sources
    from perfci.api.ab import ab as ab
    from perfci.api.baseline import accept_baseline as accept_baseline
    from perfci.api.baseline import describe_baseline as describe_baseline
    from perfci.api.compare import (
        CompareOutcome as CompareOutcome,
    )
    from perfci.api.compare import (
        CompareRequest as CompareRequest,
    )
    from perfci.api.compare import (
        DecisionOptions as DecisionOptions,
    )
    from perfci.api.compare import (
        Outputs as Outputs,
    )
    from perfci.api.compare import (
        compare_files as compare_files,
    )
    from perfci.api.history import (
        TrendQuery as TrendQuery,
    )
    from perfci.api.history import (
        noise_estimates as noise_estimates,
    )
    from perfci.api.history import (
        trend_view as trend_view,
    )
    from perfci.api.ingest import Ingested as Ingested
    from perfci.api.ingest import ingest as ingest
    from perfci.api.run import RunOutcome as RunOutcome
    from perfci.api.run import RunRequest as RunRequest
    from perfci.api.run import run as run
    from perfci.api.select import CaseChoice as CaseChoice
    from perfci.api.select import select_cases as select_cases
    from perfci.api.settings import Settings as Settings
    from perfci.api.settings import load_project_config as load_project_config
    from perfci.compare.gate import ExitCode as ExitCode
    from perfci.compare.gate import gate as gate

# The public names, by the module that defines each: `__all__` and the lazy attributes below come from this one
# table. Each submodule is imported on first use, so that `perfci compare` does not import the history store
# (SQLAlchemy), the engine or the workloads (numpy). The TYPE_CHECKING imports above (explicit re-exports) give
# type checkers the same names; tests/unit/test_cli_shape.py keeps the two equal.
_PUBLIC: dict[str, tuple[str, ...]] = {
    "perfci.api.ab": ("ABRequest", "ABResult", "Sources", "ab"),
    "perfci.api.baseline": ("accept_baseline", "describe_baseline"),
    "perfci.api.compare": ("CompareOutcome", "CompareRequest", "DecisionOptions", "Outputs", "compare_files"),
    "perfci.api.history": ("TrendQuery", "noise_estimates", "trend_view"),
    "perfci.api.ingest": ("Ingested", "ingest"),
    "perfci.api.run": ("RunOutcome", "RunRequest", "run"),
    "perfci.api.select": ("CaseChoice", "select_cases"),
    "perfci.api.settings": ("Settings", "load_project_config"),
    "perfci.compare.gate": ("ExitCode", "gate"),
}
_WHERE = {name: module for module, names in _PUBLIC.items() for name in names}
__all__ = sorted(_WHERE)


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
