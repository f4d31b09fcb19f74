"""`perfci ci` (the gate in CI, from the GitHub Actions environment) and `perfci merge` (join sharded runs):
options, printing and exit codes over perfci.api (ci.py, merge.py). docs/ci.md explains both."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from perfci.api.ab import Sources
from perfci.api.ci import (
    CI_OUT,
    CIOutcome,
    CIRequest,
    error_annotation,
    plan_ci,
    publish,
    publish_failure,
    run_ci,
    workflow_annotations,
)
from perfci.api.ingest import no_commit_warning
from perfci.api.merge import MergeRequest, merge
from perfci.api.settings import Settings
from perfci.cli.app import (
    DurationsOpt,
    ShardOpt,
    app,
    appendable_file,
    consoles,
    file_error,
    guard,
    note,
    progress_bar,
    project_settings,
    sharded,
    writable_folder,
)
from perfci.cli.compare import AllowMissing
from perfci.cli.options import (
    AbBudgetOpt,
    BasePythonOpt,
    ConfigOpt,
    DbOpt,
    ExitZeroOpt,
    ExtraOpt,
    FailOnOpt,
    HeadPythonOpt,
    LooksOpt,
    PairsAtOnceOpt,
    PairsOpt,
    PathOpt,
    PatternOpt,
    PytestOpt,
    RoundsOpt,
    RoundTimeOpt,
    RunnerOpt,
    SuiteOpt,
    ThresholdOpt,
    planned_pairs,
)
from perfci.compare.gate import ExitCode
from perfci.errors import PerfciError
from perfci.options import AB_BUDGET, EXTRA, LOOKS, PAIRS_AT_ONCE
from perfci.reports.terminal import comparison_table, verdict_line

Mode = Annotated[
    str,
    typer.Option(
        help="auto: A/B on a pull request (or with --base), else a run against baselines/ (and the store on a "
        "push); ab; baseline."
    ),
]
Base = Annotated[
    str | None, typer.Option(help="A/B base revision [default: origin/$GITHUB_BASE_REF, else $GITHUB_BASE_REF].")
]
Out = Annotated[Path, typer.Option(help="Output folder (results, report.html, summary.md).")]
ReportOnly = Annotated[
    bool,
    typer.Option(
        "--report-only",
        help="Report and annotate, and exit 0 whatever the verdicts (a gate that could not run still exits 2 or 3).",
    ),
]
Summary = Annotated[Path | None, typer.Option(help="Append the Markdown summary here [default: $GITHUB_STEP_SUMMARY].")]
Output = Annotated[Path | None, typer.Option(help="Write verdict= and counts here [default: $GITHUB_OUTPUT].")]


@app.command("ci")
def ci_command(
    mode: Mode = "auto", base: Base = None, paths: PathOpt = None, suites: SuiteOpt = None,
    patterns: PatternOpt = None, out: Out = CI_OUT, runner: RunnerOpt = None,
    threshold: ThresholdOpt = None,
    db: DbOpt = None, report_only: ReportOnly = False, shard: ShardOpt = None, pairs: PairsOpt = None,
    extra: ExtraOpt = EXTRA.default, looks: LooksOpt = LOOKS.default, budget: AbBudgetOpt = AB_BUDGET.default,
    round_time: RoundTimeOpt = None, rounds: RoundsOpt = None,
    step_summary: Summary = None, github_output: Output = None, config: ConfigOpt = None,
    base_python: BasePythonOpt = None, head_python: HeadPythonOpt = None, durations: DurationsOpt = None,
    allow_missing: AllowMissing = False, pytest: PytestOpt = None,
    pairs_at_once: PairsAtOnceOpt = PAIRS_AT_ONCE.default,
) -> None:  # fmt: skip
    """The gate for CI: A/B on a pull request, a run (and history) on a push; summary, annotations, outputs."""
    req = CIRequest(
        mode=mode,
        base=base,
        sources=Sources(paths, suites, patterns, pytest),
        out=out,
        runner=runner,
        threshold=threshold,
        db=db,
        report_only=report_only,
        shard=shard,
        pairs=pairs,
        pairs_at_once=pairs_at_once,
        extra=extra,
        looks=looks,
        budget_s=budget,
        sample_budget_s=round_time,
        rounds=rounds,
        step_summary=step_summary,
        github_output=github_output,
        base_python=base_python,
        head_python=head_python,
        allow_missing=allow_missing,
    )

    def body() -> int:
        # where to publish a failure needs the environment alone: a configuration that cannot be read is published
        with failure_published(Settings(dict(os.environ)), req):
            return gate(project_settings(config))

    def gate(settings: Settings) -> int:
        sharded_req = replace(req, shard=sharded(shard, durations))
        plan = plan_ci(settings, sharded_req)
        appendable_file(plan.where.step_summary, "--step-summary ($GITHUB_STEP_SUMMARY)")
        appendable_file(plan.where.output, "--github-output ($GITHUB_OUTPUT)")
        note(f"perfci ci: {describe(plan.mode, plan.base_rev, plan.ingest, req.environments)}")
        planned = planned_pairs(pairs, extra, looks) if plan.mode == "ab" else None
        bar, update = progress_bar("starting", prefix="A/B " if plan.mode == "ab" else "",
                                   budget_s=budget if plan.mode == "ab" else None,
                                   pairs_planned=planned)  # fmt: skip
        with bar:
            outcome = run_ci(
                settings, sharded_req, settings.env, update, lambda d: writable_folder(d, "--out"), plan, note
            )
        print_ci(outcome, report_only)
        return ExitCode.OK if report_only else outcome.code

    guard(body)


@contextlib.contextmanager
def failure_published(settings: Settings, req: CIRequest) -> Iterator[None]:
    """A gate that stops before its verdict (a PerfciError): the outputs and the step summary say so, and an
    `::error` line, before the one error line on stderr."""
    try:
        yield
    except (PerfciError, OSError) as exc:  # a full disk or an unwritable cache stopped it too, and published nothing
        error = exc if isinstance(exc, PerfciError) else file_error(exc)
        where = settings.ci_environment(req.base, req.step_summary, req.github_output)
        consoles()[0].print(error_annotation(error.message), highlight=False, markup=False, soft_wrap=True)
        with contextlib.suppress(OSError):  # the outputs may sit on the disk that is full
            publish_failure(where, error.message, error.exit_code)
        if error is exc:
            raise
        raise error from None


def describe(mode: str, base_rev: str | None, ingest: bool, environments: bool = False) -> str:
    if mode == "ab" and environments:
        base = base_rev or "the working tree"
        return f"A/B of {base} in the base environment against the working tree in the head environment"
    if mode == "ab":
        return f"A/B of {base_rev} (base) against the working tree (head)"
    return "a run, compared with baselines/<runner>.json when it exists" + (
        ", then added to the history store" if ingest else ""
    )


def print_ci(outcome: CIOutcome, report_only: bool) -> None:
    out, _ = consoles()
    for line in workflow_annotations(outcome, report_only):
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    for path in publish(outcome):
        note(f"wrote {path}")
    if outcome.comparison is not None:
        for w in outcome.comparison.warnings:
            note(f"warning: {w}")
    if outcome.ingested is not None:
        note(f"history store: {outcome.ingested.added} run(s) added, {outcome.ingested.skipped} already there")
        if outcome.ingested.without_commit:
            note(f"warning: {no_commit_warning(outcome.ingested.without_commit)}")
    note(verdict_line(outcome.comparison, outcome.run))
    note(f"report: {outcome.out_dir / 'report.html'}\nsummary: {outcome.out_dir / 'summary.md'}")


@app.command("merge")
def merge_command(
    files: Annotated[list[Path], typer.Argument(help="Results files of the shards (results.json).")],
    out: Annotated[Path, typer.Option(help="Output folder for the merged results, report and summary.")],
    baseline: Annotated[Path | None, typer.Option(help="Results file to compare with.")] = None,
    runner: RunnerOpt = None,
    threshold: ThresholdOpt = None,
    exit_zero: ExitZeroOpt = False,
    config: ConfigOpt = None,
    allow_missing: AllowMissing = False,
    fail_on: FailOnOpt = None,
) -> None:
    """Join the results of a sharded run (perfci run --shard I/N) into one results.json, report and summary."""
    req = MergeRequest(files, out, runner, baseline, threshold, allow_missing=allow_missing, fail_on=fail_on)

    def body() -> int:
        writable_folder(out, "--out")
        outcome = merge(project_settings(config), req)
        note(f"merged {len(files)} file(s): {len(outcome.result.cases)} cases")
        if outcome.comparison is not None:  # the verdicts, as `run --baseline` shows them (only the headline was)
            consoles()[0].print(comparison_table(outcome.comparison))
            for w in outcome.comparison.warnings:  # other settings, hardware: said by compare, not by merge
                note(f"warning: {w}")
        note(verdict_line(outcome.comparison, outcome.result))
        note(f"results: {out / 'results.json'}\nreport:  {out / 'report.html'}")
        return ExitCode.OK if exit_zero else outcome.exit_code()

    guard(body)
