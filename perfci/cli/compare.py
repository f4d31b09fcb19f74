"""`perfci compare`, `perfci ab`, `perfci baseline update|show`: options, printing and exit codes over
perfci.api (compare.py, ab.py, baseline.py).

Both comparing commands print the verdict table (or `--format json`: the saved-comparison document), and with
`--out DIR` write `comparison.json`, `report.html`, `summary.md` and `junit.xml` there; `--junit PATH` writes
JUnit XML anywhere. Exit codes: 0 no regression, 1 regression, 2 usage/input error, 3 failures.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from perfci.api.baseline import accept_baseline, describe_baseline
from perfci.api.compare import (
    CompareRequest,
    DecisionOptions,
    Outputs,
    compare_files,
    comparison_document,
    comparison_json,
    unpaired_remedy,
    unsettled_note,
)
from perfci.cli.app import (
    DurationsOpt,
    OutputFormat,
    ShardOpt,
    app,
    baseline_app,
    consoles,
    emit,
    guard,
    note,
    plain_value,
    print_decisions,
    print_json,
    print_json_text,
    progress_bar,
    project_settings,
    sharded,
    writable_folder,
)
from perfci.cli.options import (
    AbBudgetOpt,
    ABCpusOpt,
    BasePythonOpt,
    BuildOpt,
    ConfigOpt,
    DbOpt,
    ExitZeroOpt,
    ExtraOpt,
    FailOnOpt,
    FmtOpt,
    GpuModeOpt,
    HeadPythonOpt,
    HistoryNoiseOpt,
    JobNoiseOpt,
    LooksOpt,
    MaxMemoryOpt,
    MemoryOpt,
    PairsAtOnceOpt,
    PairsOpt,
    PathOpt,
    PatternOpt,
    PytestOpt,
    RankOpt,
    RoundTimeOpt,
    RunnerOpt,
    SeedOpt,
    SuiteOpt,
    ThreadsOpt,
    ThresholdOpt,
    TimeoutOpt,
    planned_pairs,
    unused_db_note,
)
from perfci.compare.expected import EXPECTED_FILE
from perfci.compare.gate import ExitCode
from perfci.format.model import Comparison, RunResult
from perfci.metrics.registry import LATENCY
from perfci.options import (
    AB_BUDGET,
    ALLOW_MISSING,
    BASE_IMAGE,
    CONTAINER_RUNTIME,
    EXTRA,
    HEAD_IMAGE,
    LOCK_CLOCKS,
    LOOKS,
    PAIRS_AT_ONCE,
    SEED,
)
from perfci.profilers.nvml import locked_sm_clocks
from perfci.reports.decisions import BY_TIME, DecisionView
from perfci.reports.terminal import comparison_table, verdict_line
from perfci.reports.units import format_seconds

if TYPE_CHECKING:
    from perfci.api.ab import ABResult

Conf = Annotated[float, typer.Option(help="One-sided confidence per case and metric.")]
Family = Annotated[str, typer.Option(help="Across cases: none (theta controls the family) or bonferroni.")]
Catch = Annotated[
    float, typer.Option(help="Probability of flagging a change of exactly the threshold (0.5: estimate >= theta).")
]
StoreBaseline = Annotated[
    str | None,
    typer.Option(
        "--baseline",
        help="store:BRANCH[:N]: compare the one results file given with the latest N (10) runs of BRANCH on its "
        "runner class in the history store (--db), with their learned cross-job noise.",
    ),
]
Metrics = Annotated[list[str] | None, typer.Option("--metric", help="Metric to compare (repeatable).")]
Out = Annotated[Path | None, typer.Option(help="Write comparison.json, report.html and junit.xml here.")]
Html = Annotated[Path | None, typer.Option(help="Also write an HTML report here.")]
Junit = Annotated[Path | None, typer.Option(help="Write JUnit XML here.")]
Expected = Annotated[Path | None, typer.Option(help=f"Expected-changes file (default ./{EXPECTED_FILE}).")]
AllowMismatch = Annotated[bool, typer.Option(help="Compare runs from different hardware anyway.")]
AllowMissing = Annotated[bool, typer.Option("--allow-missing", help=ALLOW_MISSING.help_text())]
BaseRev = Annotated[
    str | None, typer.Argument(help="Base revision (commit, branch, tag); optional with --base/--head-python.")
]
BaseImage = Annotated[str | None, typer.Option("--base-image", help=BASE_IMAGE.help_text())]
HeadImage = Annotated[str | None, typer.Option("--head-image", help=HEAD_IMAGE.help_text())]
ContainerRuntime = Annotated[
    str, typer.Option("--container-runtime", help=CONTAINER_RUNTIME.help_text(), show_default=False)
]
HeadRev = Annotated[str | None, typer.Argument(help="Head revision (default: the working tree as it is).")]
ABResumeOpt = Annotated[
    bool,
    typer.Option(
        "--resume",
        help="Continue an interrupted A/B in --out: the pairs on disk are kept, the missing ones measured, with a "
        "fresh time budget.",
    ),
]
LockClocksOpt = Annotated[bool, typer.Option("--lock-clocks", help=LOCK_CLOCKS.help_text())]


def print_unsettled_hint(cases: list[str], remedy: str, comparison: Comparison | None = None) -> None:
    """One note on stderr when results from separate jobs could not settle some cases (cross-job noise)."""
    if text := unsettled_note(cases, remedy, comparison):
        note(text)


def print_outcome(
    comparison: Comparison,
    candidate: RunResult | None,
    written: list[Path],
    fmt: OutputFormat,
    decisions: DecisionView = BY_TIME,
    said: tuple[str, ...] = (),
) -> None:
    """`said`: warnings the caller has printed already (an A/B's environments line), not printed twice."""
    if fmt is OutputFormat.json:
        print_json_text(consoles()[0], comparison_json(comparison))  # the document's text, written by orjson
    else:
        emit(fmt, lambda: comparison_document(comparison), lambda: comparison_table(comparison))
    print_decisions(candidate, decisions, fmt)
    for w in comparison.warnings:
        if w not in said:
            note(f"warning: {w}")
    note(verdict_line(comparison, candidate))
    if written:
        note(f"comparison: {written[0]}\nreport:     {written[1]}")


def decision_options(
    threshold: float | None,
    confidence: float,
    family: str,
    metric: list[str] | None,
    catch: float,
    fail_on: str | None,
    job_noise: float | None = None,
) -> DecisionOptions:
    """The decision flags `compare` and `ab` share, as the API's options."""
    return DecisionOptions(
        threshold=threshold,
        confidence=confidence,
        family=family,
        metrics=tuple(metric or ()),
        job_noise=job_noise,
        catch=catch,
        fail_on=fail_on,
    )


@app.command()
def compare(
    baseline: Annotated[Path, typer.Argument(help="Baseline results file (or, alone, the candidate).")],
    candidate: Annotated[Path | None, typer.Argument(help="Candidate results file.")] = None,
    runner: RunnerOpt = None, threshold: ThresholdOpt = None, confidence: Conf = 0.99, family: Family = "none",
    catch: Catch = 0.75, job_noise: JobNoiseOpt = None, history_noise: HistoryNoiseOpt = None, db: DbOpt = None,
    metric: Metrics = None, allow_mismatch: AllowMismatch = False, out: Out = None, html: Html = None,
    junit: Junit = None, expected: Expected = None, config: ConfigOpt = None, exit_zero: ExitZeroOpt = False,
    fmt: FmtOpt = OutputFormat.table, store_baseline: StoreBaseline = None, fail_on: FailOnOpt = None,
    allow_missing: AllowMissing = False, rank: RankOpt = None, max_memory: MaxMemoryOpt = None,
) -> None:  # fmt: skip
    """Compare two results files (or one against baselines/<runner>.json, or with --baseline store:main[:N]
    against the latest N runs of main in the history store); exit 1 on a regression."""
    decision = decision_options(threshold, confidence, family, metric, catch, fail_on, job_noise)
    req = CompareRequest(
        baseline=baseline,
        candidate=candidate,
        runner=runner,
        decision=decision,
        history_noise=history_noise,
        db=db,
        allow_mismatch=allow_mismatch,
        allow_missing=allow_missing,
        expected=expected,
        outputs=Outputs(out=out, junit=junit, html=html),
        store_baseline=store_baseline,
    )

    def body() -> int:
        settings = project_settings(config)
        view = settings.decisions(rank, max_memory)
        outcome = compare_files(settings, replace(req, outputs=replace(req.outputs, decisions=view)))
        print_outcome(outcome.comparison, outcome.candidate, outcome.written, fmt, outcome.decisions)
        print_unsettled_hint(outcome.unsettled, unpaired_remedy(outcome.unsettled), outcome.comparison)
        if db is not None and store_baseline is None and not settings.history_noise(history_noise, job_noise):
            note(unused_db_note(str(candidate or baseline)))
        return ExitCode.OK if exit_zero else outcome.exit_code()

    guard(body)


@app.command("ab")
def ab_command(
    base_rev: BaseRev = None, head_rev: HeadRev = None, paths: PathOpt = None, patterns: PatternOpt = None,
    suites: SuiteOpt = None, pairs: PairsOpt = None, extra: ExtraOpt = EXTRA.default, looks: LooksOpt = LOOKS.default,
    budget: AbBudgetOpt = AB_BUDGET.default, round_time: RoundTimeOpt = None, threads: ThreadsOpt = None,
    cpus: ABCpusOpt = None, timeout: TimeoutOpt = None, seed: SeedOpt = SEED.default, build: BuildOpt = None,
    threshold: ThresholdOpt = None, confidence: Conf = 0.99, family: Family = "none", catch: Catch = 0.75,
    metric: Metrics = None, out: Out = None, junit: Junit = None, memory_limit: MemoryOpt = None,
    config: ConfigOpt = None, exit_zero: ExitZeroOpt = False, fmt: FmtOpt = OutputFormat.table, shard: ShardOpt = None,
    gpu_mode: GpuModeOpt = None, base_python: BasePythonOpt = None, head_python: HeadPythonOpt = None,
    fail_on: FailOnOpt = None, resume: ABResumeOpt = False, durations: DurationsOpt = None, expected: Expected = None,
    lock_clocks: LockClocksOpt = False, base_image: BaseImage = None, head_image: HeadImage = None,
    allow_missing: AllowMissing = False, pairs_at_once: PairsAtOnceOpt = PAIRS_AT_ONCE.default,
    container_runtime: ContainerRuntime = CONTAINER_RUNTIME.default, pytest: PytestOpt = None,
) -> None:  # fmt: skip
    """Same-machine A/B in lockstep pairs of two git revisions (the recommended PR gate), two Python environments
    (--base-python/--head-python: a library upgrade), two container images (--base-image/--head-image), or both."""
    from perfci.ab.containers import image_settings
    from perfci.api.ab import ABRequest, Sources, ab  # here: the engine and the workloads (numpy), for `ab` only

    req = ABRequest(
        base_rev=base_rev,
        head_rev=head_rev,
        sources=Sources(paths, suites, patterns, pytest),
        pairs=pairs,
        pairs_at_once=pairs_at_once,
        memory_limit=memory_limit,
        extra=extra,
        looks=looks,
        budget_s=budget,
        sample_budget_s=round_time,
        threads=threads,
        cpus=cpus,
        timeout_s=timeout,
        seed=seed,
        build=build,
        decision=decision_options(threshold, confidence, family, metric, catch, fail_on),
        out=out,
        junit=junit,
        expected=expected,
        shard=shard,
        gpu_mode=gpu_mode,
        base_python=base_python,
        head_python=head_python,
        images=image_settings(base_image, head_image, container_runtime),
        resume=resume,
        allow_missing=allow_missing,
    )

    def body() -> int:
        settings = project_settings(config)
        sharded_req = replace(req, shard=sharded(shard, durations))
        bar, update = progress_bar(
            "A/B: starting", prefix="A/B ", budget_s=budget, pairs_planned=planned_pairs(pairs, extra, looks)
        )
        with bar, locked_sm_clocks(lock_clocks, note):
            result = ab(settings, sharded_req, settings.env, update, lambda d: writable_folder(d, "--out"), note)
        print_ab(result, fmt)
        return ExitCode.OK if exit_zero else result.exit_code()

    guard(body)


def print_ab(result: ABResult, fmt: OutputFormat) -> None:
    outcome = result.outcome
    meta = result.comparison.settings.get("ab", {})
    envs = meta.get("environments")
    said: tuple[str, ...] = ()
    if envs:
        base, head = (
            f"image {envs[s]['image']}" if "image" in envs[s] else envs[s]["python"] for s in ("base", "head")
        )
        note(f"environments: base {base} -> head {head}")
        said = tuple(result.comparison.warnings[:1])  # the environments line (ab/orchestrate.py puts it first)
        for line in said:
            note(line)
    print_outcome(result.comparison, outcome.head, result.written, fmt, said=said)
    note(
        f"A/B: {outcome.pairs_run} pairs in {outcome.looks_run} of {meta.get('looks_planned')} looks, "
        f"{outcome.elapsed_s:.0f} s; results: {result.out_dir / 'base'}, {result.out_dir / 'head'}"
    )


@baseline_app.command("update")
def baseline_update(
    results: Annotated[Path | None, typer.Argument(help="Results file (default: the latest perfci run).")] = None,
    reason: Annotated[str, typer.Option(help="Why these numbers are the new reference (recorded). Required.")] = "",
    runner: RunnerOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Accept results as the baseline of their runner class: writes baselines/<runner>.json."""

    def body() -> int:
        done = accept_baseline(project_settings(config), results, reason, runner)
        note(f"baseline {done.path} <- {done.source} ({len(done.run.cases)} cases): {done.reason}")
        for warning in done.warnings:
            note(f"warning: {warning}.")
        return 0

    guard(body)


@baseline_app.command("show")
def baseline_show(
    runner: Annotated[str | None, typer.Option(help="Runner class (default: this machine's).")] = None,
    config: ConfigOpt = None,
    fmt: FmtOpt = OutputFormat.table,
) -> None:
    """Show the stored baseline of a runner class: when, why, from which commit, and its cases."""

    def body() -> int:
        info = describe_baseline(project_settings(config), runner)
        out, _ = consoles()
        if fmt is OutputFormat.json:
            print_json(out, info)
            return 0
        for key, value in info.items():
            if key != "cases":
                out.print(f"{key}: {plain_value(value)}", highlight=False, markup=False)
        for c in info["cases"]:
            med = c[LATENCY]
            shown = format_seconds(med) if isinstance(med, float) else c["status"]
            out.print(f"  {c['id']}: {shown}", highlight=False, markup=False)
        return 0

    guard(body)
