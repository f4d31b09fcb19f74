"""What is compared and how strictly: decision settings, per-metric values per round, practical thresholds.

Metrics compared by default: `latency.median` (timed: statistical rule on per-round medians) and the memory
peaks (near-deterministic: tolerance rule on per-round values). Other metrics can be listed in
`DecisionSettings.metrics`: `latency.min/p10/p90/p99` (per-round minimum and quantiles),
`latency.vs_reference` (per-round median over the speed reference's, profilers/reference.py; needs runs made
with `--speed-reference`), `throughput`, `flops`, `bandwidth` (derived from the per-round medians, so they agree
with latency), `energy_per_call`.

Practical threshold theta for a case and metric, first found wins:
1. `DecisionSettings.threshold` (the CLI's `--threshold`) for timed metrics;
2. the configuration's `thresholds` (`{"kernels.*": {"latency": 0.03, "memory": 0.01}}`, exact metric name
   beats its family, later pattern beats earlier);
3. the metric's definition (`MetricDef.threshold`, perfci/metrics/definitions.py): timed metrics 3% on CPU, 1%
   on GPU cases (`@cuda...`); memory 1% (+ 1 MiB absolute slack); `host.overhead` 5%. A launch-bound GPU case's
   host-set figures (latency and what derives from it; not `device.time`, which is the GPU's own clock) take the
   CPU's 3%: the host sets them, and in A/As of a launch-bound ResNet-50 on an H200 the two sides differed by
   0.8-1.0% in every pair of a run (docs/compare.md). Accuracy metrics have an absolute threshold: a tenth of
   the case's tolerance for the metric (an error that grew by more than that is a regression, even inside the
   tolerance).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from perfci.config import configured_threshold
from perfci.metrics.definition import MetricDef, MetricRegistry
from perfci.metrics.registry import DEFAULT_COMPARED, LATENCY, VS_REFERENCE, default_registry
from perfci.options import AB_BUDGET, EXTRA, LOOKS
from perfci.options import FAIL_ON as FAIL_ON_OPTION
from perfci.stats.decision import MIN_FRACTION

DEFAULT_METRICS = DEFAULT_COMPARED
FAIL_ON = FAIL_ON_OPTION.choices  # what may fail the gate: regressions only (default), or slower rows too
MEMORY_SLACK_BYTES = float(2**20)
# Cross-job noise assumed for unpaired comparisons when not given: measured 0.11-0.13 between separate
# invocations on a shared 2-core CI VM (docs/quality/stored.md); GPUs of one class are steadier.
CPU_JOB_NOISE = 0.10
GPU_JOB_NOISE = 0.03
# The same for `latency.vs_reference` (CPU only): the speed reference cancels most of the per-job shift; five
# invocations of the default suite spread 7.7-13.7% with 5 rounds, 2.0-5.4% with 20 and 2.8-7.0% with 40, which
# leaves a job term of a couple of percent (docs/measurement.md, "Speed reference").
REFERENCE_JOB_NOISE = 0.03
# The same for cases measured in-process by the pytest plugin, on both sides (rounds marked `in_process`): two
# pytest sessions are usually run on one machine (a developer's, or one CI job measuring both sides). Eight
# sessions of a pytest-benchmark-style file on the 2-core CI machine spread 1.2-2.4% (sd of the session's mean
# log) for calibrated cases (docs/pytest.md); 5% leaves room for a shared runner. Pass --perfci-job-noise (or
# `perfci compare --job-noise`) for a baseline from another machine. Where the machine's speed moved while the two
# sessions ran (their rounds' speed probe spread past 30%), compare/contended.py widens it (2026-12-06: the same VM
# moved 2x in phases).
IN_PROCESS_JOB_NOISE = 0.05
# The least cross-job noise of an unpaired comparison that would blame the candidate when either side was measured
# on a busy CPU (compare/contended.py, `busy_machine`): a busy machine's speed is not the same from one job to the
# next, even when both jobs were equally busy. Two pytest sessions on the 2-core CI VM, each beside a 2-process CPU
# hog, differed by +38%, +45% and +79% on three unchanged cases (log 0.32-0.58, docs/compare.md); at 25% such
# shifts stay `inconclusive` with three rounds a side, and a slowdown of 3x or more is still a regression.
BUSY_JOB_NOISE = 0.25


@dataclass(frozen=True, kw_only=True)
class ABPlan:
    """How a same-machine A/B spends its time: `extra` pairs added per further look (to undecided cases only),
    `looks` in all (alpha is split evenly over them), and the wall-clock budget of the measuring (no new look
    starts when it would overrun). These defaults are every command's and request's (`AB_DEFAULTS`)."""

    extra: int = EXTRA.default
    looks: int = LOOKS.default
    budget_s: float = AB_BUDGET.default


AB_DEFAULTS = ABPlan()


@dataclass(frozen=True)
class DecisionSettings:
    """How verdicts are reached. `confidence` is one-sided per case and metric, for the whole comparison: it is
    split evenly over `looks` (sequential looks of adaptive A/B) and, with `family="bonferroni"`, over cases."""

    threshold: float | None = None  # override theta for timed metrics (None: configuration, then defaults)
    confidence: float = 0.99
    looks: int = 1
    family: str = "none"  # none | bonferroni
    noise_factor: float = 3.0
    catch: float = 0.75  # a change of exactly theta is flagged with about this probability (stats/decision.py)
    job_noise: float | None = None  # unpaired only: sd of the per-job shift, log scale (None: per device)
    trim: float = 0.2  # paired only: Yuen's trimmed mean of the pair log-ratios (0: the plain paired t)
    metrics: tuple[str, ...] = DEFAULT_METRICS
    thresholds: dict[str, dict[str, float]] = field(default_factory=dict)
    # unpaired only, when job_noise is None: per (case, metric), e.g. compare/history_noise.HistoryNoise; a None
    # answer keeps the default
    job_noise_lookup: Callable[[str, str], float | None] | None = None
    memory_slack_bytes: float = MEMORY_SLACK_BYTES
    # `slower`/`faster` need an estimate of at least this share of theta (stats/decision.py); the gate
    # fails on `regression` rows, or also on `slower` rows with fail_on = "slower"
    slower_min: float = MIN_FRACTION
    fail_on: str = FAIL_ON_OPTION.default
    # the metrics known (definitions, thresholds, rules): the default registry unless a caller brings its own
    registry: MetricRegistry = field(default_factory=default_registry, compare=False, repr=False)

    def alpha(self, n_cases: int = 1) -> float:
        a = (1.0 - self.confidence) / max(1, self.looks)
        return a / max(1, n_cases) if self.family == "bonferroni" else a

    def as_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "confidence": self.confidence,
            "looks": self.looks,
            "family": self.family,
            "noise_factor": self.noise_factor,
            "catch": self.catch,
            "job_noise": self.job_noise,
            "job_noise_from": "given"
            if self.job_noise is not None
            else ("history" if self.job_noise_lookup is not None else "default"),
            "trim": self.trim,
            "metrics": list(self.metrics),
            "thresholds": self.thresholds,
            "slower_min": self.slower_min,
            "fail_on": self.fail_on,
        }


def _configured(settings: DecisionSettings, case_id: str, metric: str) -> float | None:
    return configured_threshold(settings.thresholds, case_id, metric)


def is_gpu(case_id: str) -> bool:
    return case_id.rsplit("@", 1)[-1].startswith("cuda")


def job_noise(settings: DecisionSettings, case_id: str, metric: str = LATENCY, in_process: bool = False) -> float:
    if settings.job_noise is not None:
        return settings.job_noise
    if settings.job_noise_lookup is not None:
        learned = settings.job_noise_lookup(case_id, metric)
        if learned is not None:
            return learned
    if is_gpu(case_id):
        return GPU_JOB_NOISE
    if in_process and metric != VS_REFERENCE:
        return IN_PROCESS_JOB_NOISE
    return REFERENCE_JOB_NOISE if metric == VS_REFERENCE else CPU_JOB_NOISE


def practical_threshold(
    settings: DecisionSettings,
    case_id: str,
    metric: MetricDef,
    launch_bound: bool = False,
    tolerance: float | None = None,
) -> float:
    """theta for `metric` of `case_id` (relative, or in the metric's unit for an absolute threshold);
    `launch_bound`: the case's GPU was idle most of a call (its latency is the host's); `tolerance`: the case's
    tolerance for the metric, where it records one (an absolute threshold is a share of it)."""
    if metric.timed and settings.threshold is not None:
        return settings.threshold
    configured = _configured(settings, case_id, metric.name)
    if configured is not None:
        return configured
    return metric.threshold.default(is_gpu(case_id), launch_bound, tolerance)
