"""Same-machine A/B of two git revisions (`perfci ab`), and the re-measurement of cases a stored baseline could
not settle (`perfci run --confirm`), both through ab/orchestrate.py's lockstep pairs."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from perfci.ab.confirm import merge_confirmation
from perfci.ab.containers import ImageSettings, device_clock_warnings, sides_in_images, source_folders
from perfci.ab.environments import probe
from perfci.ab.orchestrate import CPU_FIRST_LOOK, ABOutcome, ABSettings, run_ab
from perfci.ab.revisions import Side, checked_out, map_path, repo_root
from perfci.api.compare import (
    DecisionOptions,
    Outputs,
    decision_settings,
    unsettled_cases,
    with_allowed_missing,
    with_expected,
    write_outputs,
)
from perfci.api.select import compile_patterns
from perfci.api.settings import Settings
from perfci.api.shards import Shard
from perfci.compare.gate import ExitCode, gate
from perfci.compare.policy import AB_DEFAULTS, DecisionSettings
from perfci.engine.progress import ProgressFn
from perfci.engine.runner import RunSettings
from perfci.errors import UsageError
from perfci.format.model import Comparison, RunResult
from perfci.metrics.registry import ENERGY
from perfci.patterns import matches_any
from perfci.options import AB_BUDGET, EXTRA, LOOKS, PAIRS
from perfci.profilers.timing import TimingSettings
from perfci.workloads.discovery import builtin_source, expand_paths


def default_ab_out() -> Path:
    return Path(".perfci") / "ab" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


@dataclass(frozen=True)
class Sources:
    """What to measure on each side: workload paths (mapped into each checkout), suites, `-k` patterns."""

    paths: list[Path] | None = None
    suites: list[str] | None = None
    patterns: list[str] | None = None


def side_sources(settings: Settings, sources: Sources, repo: Path, root: Path) -> list[str]:
    """Workload sources of one side: the given paths (else the configuration's) mapped into the side's checkout,
    plus built-in suites; the default suite when nothing is named."""
    user = settings.paths(sources.paths)
    suites = settings.suites(sources.suites)
    mapped = [m for p in user if (m := map_path(p, repo, root)).exists()]
    found = expand_paths(mapped) if mapped else []
    found += [builtin_source(s) for s in suites]
    return found if (user or suites) else [builtin_source("default")]


def run_revisions(
    settings: Settings,
    base_rev: str | None,
    head_rev: str | None,
    sources: Sources,
    ab_settings: ABSettings,
    out_dir: Path,
    env: Mapping[str, str],
    keep: Callable[[list[str]], set[str]],
    progress: ProgressFn | None = None,
    pythons: tuple[Path | None, Path | None] = (None, None),
    images: ImageSettings | None = None,
) -> ABOutcome:
    """Check both revisions out (head None: the working tree as it is) and run the A/B over the kept cases; with
    an interpreter (or venv folder) for either side, both sides' environments are probed first. With `images`,
    each side's processes run in its container image (perfci/ab/containers.py)."""
    repo = repo_root(Path.cwd())
    with tempfile.TemporaryDirectory(prefix="perfci-") as tmp:
        work = Path(tmp)
        here = len(str(repo))  # a side in a worktree gets a path of the working tree's length (worktree_path)
        with (
            checked_out(repo, "base", base_rev, work, dict(env), here if head_rev is None else None) as a,
            checked_out(repo, "head", head_rev, work, dict(env), here if base_rev is None else None) as b,
        ):
            if pythons != (None, None):
                a = with_environment(a, pythons[0], "--base-python")
                b = with_environment(b, pythons[1], "--head-python")
            both = (side_sources(settings, sources, repo, a.root), side_sources(settings, sources, repo, b.root))
            if images is not None:
                a, b = sides_in_images((a, b), images, work, [repo, Path.cwd(), *source_folders(both[0] + both[1])])
            return run_ab(a, b, both, ab_settings, out_dir, select=keep, progress=progress)


def with_environment(side: Side, python: Path | None, option: str) -> Side:
    """The side with its workers' interpreter probed (this interpreter when none is named)."""
    named = python if python is not None else Path(sys.executable)
    return replace(side, environment=probe(named, option, side.env, side.root))


@dataclass(frozen=True, kw_only=True)
class ABRequest:
    base_rev: str | None = None  # None: the working tree on both sides (an A/B of environments only)
    head_rev: str | None = None
    sources: Sources = field(default_factory=Sources)
    pairs: int | None = None  # first look; None: 4 when every case runs on a GPU, else 8 (compare/ab.first_look)
    extra: int = AB_DEFAULTS.extra
    looks: int = AB_DEFAULTS.looks
    budget_s: float = AB_DEFAULTS.budget_s
    sample_budget_s: float | None = None
    threads: int | None = None
    cpus: str | None = None
    timeout_s: float | None = None
    seed: int = 0
    build: str | None = None
    decision: DecisionOptions = field(default_factory=DecisionOptions)
    out: Path | None = None
    junit: Path | None = None
    expected: Path | None = None
    shard: Shard | None = None  # keep only this shard's cases (perfci/api/shards.py)
    gpu_mode: str | None = None  # hot | cold | graph | sustained | sustained-cold (docs/measurement.md)
    base_python: Path | None = None  # interpreter or venv folder of the base side's workers (default: this one)
    head_python: Path | None = None
    images: ImageSettings | None = None  # run each side's workers in a container image (`--base-image/--head-image`)
    resume: bool = False  # continue the pairs an interrupted A/B left in `out` (which must be given)
    allow_missing: bool = False  # a case only the base side has passes (compare/coverage.py)


@dataclass(frozen=True)
class ABResult:
    outcome: ABOutcome
    comparison: Comparison  # with expected changes applied
    out_dir: Path
    written: list[Path]

    def exit_code(self) -> ExitCode:
        return gate(self.comparison, self.outcome.head)




def _check_ab_limits(req: ABRequest) -> None:
    """Options checked before anything is checked out (`--budget nan` never stopped a look, and
    `--pairs 1000000000` ran on past its time budget, which is only read between looks)."""
    for option, value in ((AB_BUDGET, req.budget_s), (PAIRS, req.pairs), (EXTRA, req.extra), (LOOKS, req.looks)):
        if value is not None and (problem := option.problem(value)) is not None:  # the bounds of the options table
            raise UsageError(f"{option.flag}: {problem}.")


def _check_images(req: ABRequest) -> None:
    """Container images come in pairs, and a side runs either in an image or in an interpreter."""
    if req.images is None:
        return
    if not req.images.base or not req.images.head:
        raise UsageError(
            "--base-image and --head-image go together.", hint="an A/A of one image names it twice (to check noise)"
        )
    if req.base_python is not None or req.head_python is not None:
        raise UsageError("--base-image/--head-image and --base-python/--head-python cannot be combined.",
                         hint="the interpreter in an image is its `python3`")  # fmt: skip


def _check_images(req: ABRequest) -> None:
    """Container images come in pairs, and a side runs either in an image or in an interpreter."""
    if req.images is None:
        return
    if not req.images.base or not req.images.head:
        raise UsageError(
            "--base-image and --head-image go together.", hint="an A/A of one image names it twice (to check noise)"
        )
    if req.base_python is not None or req.head_python is not None:
        raise UsageError("--base-image/--head-image and --base-python/--head-python cannot be combined.",
                         hint="the interpreter in an image is its `python3`")  # fmt: skip


def ab_settings(settings: Settings, req: ABRequest) -> ABSettings:
    _check_ab_limits(req)
    if req.resume and req.out is None:
        raise UsageError("--resume needs --out: the folder of the A/B to continue.")
    decision = decision_settings(settings, req.decision)
    # the energy block (a contiguous half second per GPU case at the end of each worker) only where energy per
    # call is compared: on an H200 it was 2 s of every pair's 12-15 s outside sampling (docs/measurement.md)
    energy_s = TimingSettings().energy_window_s if ENERGY in decision.metrics else 0.0
    # the runner's peaks (% of peak, the sustained clock) decide nothing in an A/B: read from the cache where a
    # `perfci run` measured them, never measured here (11.5-14.5 s of a fresh H200 runner's first A/B, docs/gpu.md)
    run_settings = RunSettings(
        measure_peaks=False,
        rounds=req.pairs or CPU_FIRST_LOOK,
        seed=req.seed,
        threads=settings.threads(req.threads),
        cpu_affinity=settings.cpus(req.cpus),
        case_timeout_s=settings.case_timeout_s(req.timeout_s),
        timing=replace(
            TimingSettings(),
            budget_s=settings.round_time_s(req.sample_budget_s),
            gpu_mode=settings.gpu_mode(req.gpu_mode),
            energy_window_s=energy_s,
        ),
    )
    return ABSettings(
        pairs=req.pairs, extra=req.extra, looks=req.looks, budget_s=req.budget_s, seed=req.seed, run=run_settings,
        decision=decision, build_command=settings.build_command(req.build), resume=req.resume,
    )  # fmt: skip


def ab(
    settings: Settings,
    req: ABRequest,
    env: Mapping[str, str],
    progress: ProgressFn | None = None,
    check_out_dir: Callable[[Path], None] | None = None,
) -> ABResult:
    """`perfci ab`: both revisions measured in lockstep pairs; the comparison's files written to the out folder."""
    _check_images(req)
    if req.base_rev is None and req.base_python is None and req.head_python is None and req.images is None:
        raise UsageError(
            "perfci ab needs a base revision, or two environments to compare.",
            hint="perfci ab BASE [HEAD], or perfci ab --base-python PATH --head-python PATH",
        )
    patterns = compile_patterns(req.sources.patterns)
    out_dir = req.out or default_ab_out()
    if check_out_dir is not None:
        check_out_dir(out_dir)
    abs_ = ab_settings(settings, req)

    def keep(case_ids: list[str]) -> set[str]:
        held = set(case_ids) if req.shard is None else req.shard.pick(case_ids)
        return {cid for cid in held if not patterns or matches_any(patterns, cid)}

    pythons = (req.base_python, req.head_python)
    outcome = run_revisions(
        settings, req.base_rev, req.head_rev, req.sources, abs_, out_dir, env, keep, progress, pythons,
        images=req.images,
    )  # fmt: skip
    comparison = with_expected(with_allowed_missing(outcome.comparison, req.allow_missing), req.expected)
    if req.images is not None:  # a side whose CUDA cases got no device clock in its container says so
        said = [*device_clock_warnings(outcome.base, f"base (image {req.images.base})"),
                *device_clock_warnings(outcome.head, f"head (image {req.images.head})")]  # fmt: skip
        comparison = replace(comparison, warnings=(*comparison.warnings, *said))
    if req.shard is not None:  # which cases this comparison holds, and how they were split
        comparison = replace(comparison, settings={**comparison.settings, **req.shard.settings()})
    written = write_outputs(Outputs(out=out_dir, junit=req.junit), comparison, outcome.head, outcome.base)
    return ABResult(outcome, comparison, out_dir, written)


def confirm_flagged(
    settings: Settings,
    comparison: Comparison,
    baseline: RunResult,
    sources: Sources,
    out_dir: Path,
    run_settings: RunSettings,
    decision: DecisionSettings,
    env: Mapping[str, str],
    notify: Callable[[str], None] = lambda message: None,
    progress: ProgressFn | None = None,
) -> Comparison:
    """`perfci run --confirm`: re-measure the flagged cases by A/B against the baseline's commit (see
    perfci.ab.confirm) with the same decision settings; without a commit in the baseline, say so and keep
    the comparison."""
    flagged = unsettled_cases(comparison, decision)
    if not flagged:
        return comparison
    commit = baseline.git.commit if baseline.git else None
    if not commit:
        warning = "--confirm: the baseline records no git commit, so flagged cases could not be re-measured"
        return replace(comparison, warnings=(*comparison.warnings, warning))
    notify(f"confirming {len(flagged)} flagged case(s) by A/B against {commit[:12]} ...")
    abs_ = ABSettings(seed=run_settings.seed, run=run_settings, decision=decision,
                      build_command=settings.build_command(None))  # fmt: skip
    wanted = set(flagged)
    outcome = run_revisions(
        settings, commit, None, Sources(sources.paths, sources.suites), abs_, out_dir / "confirm", env,
        lambda cids: set(cids) & set(wanted), progress,
    )  # fmt: skip
    return merge_confirmation(comparison, outcome.comparison, commit[:12])
