"""Same-machine A/B of two git revisions (`perfci ab`), and the re-measurement of cases a stored baseline could
not settle (`perfci run --confirm`), both through ab/orchestrate.py's lockstep pairs."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from perfci.ab.confirm import merge_confirmation
from perfci.ab.containers import ImageSettings, device_clock_warnings, sides_in_images, source_folders
from perfci.ab.environments import probe
from perfci.ab.orchestrate import ABOutcome, ABSettings, run_ab
from perfci.ab.revisions import Side, checked_out, map_path, repo_root, resolve
from perfci.ab.worktrees import ab_workdir
from perfci.api.compare import (
    DecisionOptions,
    Outputs,
    check_expected,
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
from perfci.errors import NoCasesError, PerfciError, UsageError
from perfci.format.model import Comparison, RunResult
from perfci.metrics.registry import ENERGY
from perfci.options import AB_BUDGET, CPU_FIRST_LOOK, EXTRA, LOOKS, PAIRS, PAIRS_AT_ONCE
from perfci.patterns import matches_any, pytest_expression_hint
from perfci.profilers.timing import TimingSettings
from perfci.work_folder import mark_work_folder, new_output_folder, output_folder_lock
from perfci.workloads.conventional import conventional_sources
from perfci.workloads.discovery import builtin_source, expand_paths
from perfci.workloads.pytest_cases import pytest_source


def default_ab_out() -> Path:
    return new_output_folder("ab", make=False)  # made when measuring starts: a refused A/B leaves no `.perfci/`


@dataclass(frozen=True)
class Sources:
    """What to measure on each side: workload paths and pytest files or folders (mapped into each checkout),
    suites, `-k` patterns."""

    paths: list[Path] | None = None
    suites: list[str] | None = None
    patterns: list[str] | None = None
    pytest: list[Path] | None = None


@dataclass(frozen=True)
class Chosen:
    """What an A/B measures, named in the working tree: given or configured paths, pytest paths and suites; or,
    with none of them (`conventional`), the project's conventional folders, looked up in each side's checkout
    (workloads/conventional.py)."""

    paths: tuple[Path, ...] = ()
    pytest: tuple[Path, ...] = ()
    suites: tuple[str, ...] = ()
    conventional: Path | None = None  # the project folder, in the working tree, to look in


def choose_sources(settings: Settings, sources: Sources) -> Chosen:
    """Each of paths, pytest and suites: the flag, else the configuration; with none of them given or configured,
    the project's conventional folders (under the configuration file's folder, else here)."""
    paths = settings.paths(sources.paths)
    pytest = list(sources.pytest) if sources.pytest else list(settings.cfg.pytest)
    suites = settings.suites(sources.suites)
    for p in pytest:
        if not p.exists() and not _in_repository(p):  # one in the repository may exist at a revision only
            raise missing_pytest_path(p)
    if paths or pytest or suites:
        return Chosen(tuple(paths), tuple(pytest), tuple(suites))
    project = settings.cfg.source.parent if settings.cfg.source is not None else _conventional_project(Path.cwd())
    return Chosen(conventional=project.resolve())


def _conventional_project(here: Path) -> Path:
    """Where the conventional folders are looked for with no configuration file: the nearest of `here` and the
    folders above it, up to the repository's root, that has any (`perfci ab` run from `perf/` itself, or from
    `src/`, finds the root's `perf/`); `here` where none has."""
    try:
        top = repo_root(here).resolve()
    except PerfciError:
        return here
    folder = here.resolve()
    while True:
        if conventional_sources(folder):
            return folder
        if folder == top or folder.parent == folder:
            return here
        folder = folder.parent


def _in_repository(path: Path) -> bool:
    try:
        path.resolve().relative_to(repo_root(Path.cwd()).resolve())
    except (ValueError, PerfciError):
        return False
    return True


def missing_pytest_path(path: Path, where: str = "") -> UsageError:
    """`--pytest PATH` that names nothing (`where`: e.g. " at either revision"); a pytest node id is named so."""
    node = "::" in str(path)
    return UsageError(
        f"--pytest {path}: no such file or folder{where}.",
        hint="--pytest takes a file or folder; choose tests with -k (e.g. -k test_name)" if node else None,
    )


def side_sources(chosen: Chosen, repo: Path, root: Path) -> list[str]:
    """Sources of one side: the chosen paths mapped into the side's checkout, or the conventional folders found
    there, then the built-in suites."""
    if chosen.conventional is not None:
        found = conventional_sources(map_path(chosen.conventional, repo, root))
        workloads, tests = list(found.workloads), list(found.pytest)
    else:
        workloads = [m for p in chosen.paths if (m := map_path(p, repo, root)).exists()]
        tests = [m for p in chosen.pytest if (m := map_path(p, repo, root)).exists()]
    listed = expand_paths(workloads) if workloads else []
    return listed + [pytest_source(t) for t in tests] + [builtin_source(s) for s in chosen.suites]


def nothing_to_measure(project: Path, paths_how: str = "perfci ab BASE -- perf/, or --path") -> UsageError:
    """Nothing given, configured or found in the project's conventional folders: said, never a silent pass.
    `paths_how`: how the command names workload paths (`ab` takes them after `--`, `ci` by `--path`)."""
    hint = (
        f"name workload files or folders ({paths_how}), pytest benchmarks (--pytest PATH), set `paths` or `pytest` "
        "in [tool.perfci], or run the built-in suite on purpose with --suite default"
    )
    return UsageError(
        f"nothing to measure: no workload paths or pytest benchmarks given or configured, and no perfci "
        f"workloads in {project}'s perf/ or benchmarks/ (nor pytest benchmarks in benchmarks/, bench/, perf/ or "
        "tests/).",
        hint=hint,
    )


def conventional_note(chosen: Chosen, repo: Path, roots: tuple[Path, Path]) -> str:
    """What the conventional folders gave each side (one line), or a UsageError when they gave neither side
    anything."""
    assert chosen.conventional is not None
    found = [conventional_sources(map_path(chosen.conventional, repo, r)) for r in roots]
    if not any(found):
        raise nothing_to_measure(chosen.conventional)
    sides = [f.describe(map_path(chosen.conventional, repo, r)) or "nothing" for f, r in zip(found, roots, strict=True)]
    shown = sides[0] if sides[0] == sides[1] else f"base: {sides[0]}; head: {sides[1]}"
    return f"no workload paths given or configured: measuring the project's {shown}"


def run_revisions(
    settings: Settings,
    base_rev: str | None,
    head_rev: str | None,
    sources: Sources | Chosen,
    ab_settings: ABSettings,
    out_dir: Path,
    env: Mapping[str, str],
    keep: Callable[[list[str]], set[str]],
    progress: ProgressFn | None = None,
    pythons: tuple[Path | None, Path | None] = (None, None),
    notify: Callable[[str], None] = lambda message: None,
    images: ImageSettings | None = None,
) -> ABOutcome:
    """Check both revisions out (head None: the working tree as it is) and run the A/B over the kept cases; with
    an interpreter (or venv folder) for either side, both sides' environments are probed first. With nothing
    named (`Chosen.conventional`), `notify` is told which conventional folders were measured. With `images`, each
    side's processes run in its container image (perfci/ab/containers.py)."""
    chosen = sources if isinstance(sources, Chosen) else choose_sources(settings, sources)
    repo = repo_root(Path.cwd())
    with ab_workdir() as work:
        here = len(str(repo))  # a side in a worktree gets a path of the working tree's length (worktree_path)
        with (
            checked_out(repo, "base", base_rev, work, dict(env), here if head_rev is None else None) as a,
            checked_out(repo, "head", head_rev, work, dict(env), here if base_rev is None else None) as b,
        ):
            if chosen.conventional is not None:
                notify(conventional_note(chosen, repo, (a.root, b.root)))
            if pythons != (None, None):
                a = with_environment(a, pythons[0], "--base-python")
                b = with_environment(b, pythons[1], "--head-python")
            for p in chosen.pytest:  # named in the working tree; it need only exist at one of the revisions
                if not any(map_path(p, repo, side.root).exists() for side in (a, b)):
                    raise missing_pytest_path(p, " at either revision")
            for p in chosen.paths:  # likewise; a typo was dropped without a word and the A/B passed
                if not any(map_path(p, repo, side.root).exists() for side in (a, b)):
                    raise UsageError(f"{p}: no such workload file or folder at either revision.")
            both = (side_sources(chosen, repo, a.root), side_sources(chosen, repo, b.root))
            if images is not None:
                folders = [repo, Path.cwd(), *source_folders(both[0] + both[1])]
                a, b = sides_in_images((a, b), images, work, folders, ab_settings.run.memory_limit_bytes)
            mark_work_folder(out_dir)  # the default, or any --out in .perfci/: ignored by git (once measuring)
            with output_folder_lock(out_dir):  # a second A/B in the same folder is refused while this one measures
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
    pairs: int | None = None  # first look; None: options.GPU_FIRST_LOOK or CPU_FIRST_LOOK (ab/orchestrate.first_look)
    pairs_at_once: int = (
        PAIRS_AT_ONCE.default
    )  # pairs started together after the first; 0: automatic (engine/lockstep.py)
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
    memory_limit: str | None = None  # each worker's (`--memory-limit`, else $PERFCI_MEMORY_LIMIT, else half of RAM)


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
    for option, value in ((AB_BUDGET, req.budget_s), (PAIRS, req.pairs), (EXTRA, req.extra), (LOOKS, req.looks),
                          (PAIRS_AT_ONCE, req.pairs_at_once)):  # fmt: skip
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
    if (limit := settings.memory_limit(req.memory_limit)) is not None:  # workers of a block hold theirs at once
        run_settings = replace(run_settings, memory_limit_bytes=limit)
    return ABSettings(
        pairs=req.pairs, extra=req.extra, looks=req.looks, budget_s=req.budget_s, seed=req.seed, run=run_settings,
        decision=decision, build_command=settings.build_command(req.build), resume=req.resume,
        pairs_at_once=req.pairs_at_once,
    )  # fmt: skip


def ab(
    settings: Settings,
    req: ABRequest,
    env: Mapping[str, str],
    progress: ProgressFn | None = None,
    check_out_dir: Callable[[Path], None] | None = None,
    notify: Callable[[str], None] = lambda message: None,
) -> ABResult:
    """`perfci ab`: both revisions measured in lockstep pairs; the comparison's files written to the out folder.
    `notify` is told which of the project's conventional folders are measured when nothing is named."""
    _check_images(req)
    if req.base_rev is None and req.base_python is None and req.head_python is None and req.images is None:
        raise UsageError(
            "perfci ab needs a base revision, or two environments to compare.",
            hint="perfci ab BASE [HEAD] (`perfci ab HEAD`: your uncommitted changes against the last commit), or "
            "perfci ab --base-python PATH --head-python PATH",
        )
    patterns = compile_patterns(req.sources.patterns)
    if req.out is not None and check_out_dir is not None:
        check_out_dir(req.out)
    abs_ = ab_settings(settings, req)
    chosen = choose_sources(settings, req.sources)
    check_expected(req.expected)
    out_dir = req.out or default_ab_out()
    if req.out is None and check_out_dir is not None:
        check_out_dir(out_dir)

    def keep(case_ids: list[str]) -> set[str]:
        held = set(case_ids) if req.shard is None else req.shard.pick(case_ids)
        return {cid for cid in held if not patterns or matches_any(patterns, cid)}

    pythons = (req.base_python, req.head_python)
    try:
        outcome = run_revisions(
            settings, req.base_rev, req.head_rev, chosen, abs_, out_dir, env, keep, progress, pythons, notify,
            images=req.images,
        )  # fmt: skip
    except NoCasesError as exc:  # nothing kept: a pytest-style `-k "a or b"` is a likely cause
        hint = pytest_expression_hint(req.sources.patterns)
        if hint is None or exc.hint is not None:
            raise
        raise NoCasesError(exc.message, hint=hint) from None
    except KeyboardInterrupt:  # where the pairs measured so far are, and how to go on from them
        if all((out_dir / side / "results.json").exists() for side in ("base", "head")):  # a pair: both sides
            notify(f"the pairs measured so far are in {out_dir}: continue with the same command and "
                   f"--out {out_dir} --resume")  # fmt: skip
        raise
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
    flagged = unsettled_cases(comparison, decision, for_confirmation=True)
    if not flagged:
        return comparison
    commit = baseline.git.commit if baseline.git else None
    if not commit:
        warning = "--confirm: the baseline records no git commit, so flagged cases could not be re-measured"
        return replace(comparison, warnings=(*comparison.warnings, warning))
    try:
        resolve(repo_root(Path.cwd()), commit)
    except UsageError:  # a shallow clone, a squashed branch: the run's results stand, with the reason (was exit 2)
        warning = (
            f"--confirm: the baseline's commit {commit[:12]} is not in this repository (a shallow clone? `git fetch` "
            "it, or `fetch-depth: 0` in actions/checkout), so flagged cases could not be re-measured"
        )
        return replace(comparison, warnings=(*comparison.warnings, warning))
    notify(f"confirming {len(flagged)} flagged case(s) by A/B against {commit[:12]} ...")
    abs_ = ABSettings(seed=run_settings.seed, run=run_settings, decision=decision,
                      build_command=settings.build_command(None))  # fmt: skip
    wanted = set(flagged)
    # the run's own sources: with nothing named, `perfci run` measured the built-in default suite
    named = settings.paths(sources.paths) or settings.suites(sources.suites)
    again = Sources(sources.paths, sources.suites if named else ["default"])
    outcome = run_revisions(
        settings, commit, None, again, abs_, out_dir / "confirm", env, lambda cids: set(cids) & set(wanted), progress
    )
    return merge_confirmation(comparison, outcome.comparison, commit[:12])
