"""Stored baselines as library calls: accept a results file as its runner class's baseline, describe one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfci.api.settings import Settings
from perfci.compare.baselines import latest_results, load_baseline, record, update_baseline
from perfci.format.model import RunResult
from perfci.format.schema import load_results
from perfci.metrics.registry import LATENCY
from perfci.profilers.fingerprint import fingerprint


@dataclass(frozen=True)
class Accepted:
    path: Path  # baselines/<runner>.json
    source: Path
    run: RunResult
    reason: str
    warnings: tuple[str, ...] = ()  # failed cases; cases of the replaced baseline it drops


def accept_baseline(settings: Settings, results: Path | None, reason: str, runner: str | None) -> Accepted:
    """`perfci baseline update`: results (default: the latest `perfci run`) become baselines/<runner>.json."""
    source = results or latest_results()
    loaded = load_results(source)
    name = settings.runner_class(runner, loaded.fingerprint)
    path, run, warnings = update_baseline(source, reason, name, run=loaded)
    return Accepted(path, source, run, reason.strip(), tuple(warnings))


def describe_baseline(settings: Settings, runner: str | None) -> dict[str, Any]:
    """`perfci baseline show`: when, why, from which commit, and per case its status and median latency."""
    name = settings.runner_class(runner, fingerprint() if not runner else {})
    run = load_baseline(name)
    rec = record(run)
    cases = []
    for c in run.cases:
        m = c.metric(LATENCY)
        cases.append({"id": c.id, "status": c.status.value, LATENCY: float(m.value) if m else None})
    return {
        "runner": name,
        "run_id": run.run_id,
        "commit": run.git.commit if run.git else None,
        "started_at": run.started_at,
        **{k: rec.get(k) for k in ("reason", "accepted_at", "source")},
        "cases": cases,
    }
