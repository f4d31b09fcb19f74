"""The library API under the CLI, for Python users and CI scripts: select cases, run, compare files, A/B two
revisions, accept baselines, read the history. Each call takes a `Settings` (environment and configuration,
resolved once: flag > environment > configuration > default) and returns an outcome object; nothing here
prints or exits.

    from perfci.api import Settings, RunRequest, run, load_project_config
    outcome = run(Settings(env={}, cfg=load_project_config()), RunRequest(suites=["kernels"]), env={})
    print(outcome.exit_code(), outcome.out_dir)
"""

from perfci.api.ab import ABRequest, ABResult, Sources, ab
from perfci.api.baseline import accept_baseline, describe_baseline
from perfci.api.compare import CompareOutcome, CompareRequest, DecisionOptions, Outputs, compare_files
from perfci.api.history import TrendQuery, ingest, noise_estimates, trend_view
from perfci.api.run import RunOutcome, RunRequest, run
from perfci.api.select import CaseChoice, select_cases
from perfci.api.settings import Settings, load_project_config
from perfci.compare.gate import ExitCode, gate

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
