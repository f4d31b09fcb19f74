"""`perfci ci`: the gate as one command that reads where it runs and does the right thing (docs/ci.md).

- On a pull request (GitHub's `pull_request` event, or `--base REV` anywhere): a same-machine A/B of the base
  branch (`origin/<base>` when that remote branch exists, else `<base>`) against the working tree.
- Otherwise (a push, a schedule, or `--mode baseline`): a run compared with `baselines/<runner>.json` when it
  exists, and added to the history store when one is configured (`--db` or $PERFCI_DB) on a push (or outside
  GitHub Actions).

Both measure what the A/B would: the paths, pytest benchmarks and suites given or configured, else the project's
conventional folders (workloads/conventional.py); with none of these, a usage error (`--suite default` runs the
built-in suite on purpose). A push then measures the cases that the pull requests' A/Bs compare.

Afterwards `publish` appends the Markdown summary to the step summary file and writes `verdict`, the counts and
the report's path to the outputs file; `annotations` gives the `::error`/`::warning` workflow commands that name
each regressed case. Nothing here prints or exits: the CLI does.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from perfci.api.ab import ABRequest, Sources, ab, choose_sources, nothing_to_measure
from perfci.api.compare import DecisionOptions
from perfci.api.ingest import Ingested, ingest
from perfci.api.run import RunRequest, finish_run, measure, plan_run
from perfci.api.settings import PULL_REQUEST_EVENTS, CIEnvironment, Settings
from perfci.api.shards import Shard
from perfci.compare.baselines import no_baseline_note
from perfci.compare.gate import ExitCode
from perfci.compare.policy import AB_DEFAULTS
from perfci.engine.progress import ProgressFn
from perfci.errors import InfrastructureError, UsageError
from perfci.format.model import BELOW_THRESHOLD_WORSE, CaseStatus, Comparison, RunResult, Verdict
from perfci.options import PAIRS_AT_ONCE
from perfci.reports.units import format_change_interval
from perfci.work_folder import mark_new_output_folder, output_folder_lock
from perfci.workloads.conventional import conventional_sources

MODES = ("auto", "ab", "baseline")
MAX_ANNOTATIONS = 50  # GitHub shows 10 of each kind per step; the rest are in the summary and the report
VERDICT_WORDS = {ExitCode.OK: "pass", ExitCode.REGRESSION: "regression", ExitCode.FAILED: "error"}


CI_OUT = Path("perfci-out")  # the gate's output folder unless told (the action uploads it as the artifact)


@dataclass(frozen=True, kw_only=True)
class CIRequest:
    mode: str = "auto"  # auto | ab | baseline
    base: str | None = None  # A/B base revision (default: the pull request's base branch)
    sources: Sources = field(default_factory=Sources)
    out: Path = CI_OUT
    runner: str | None = None
    threshold: float | None = None
    db: str | None = None
    report_only: bool = False
    shard: Shard | None = None
    # A/B
    pairs: int | None = None
    pairs_at_once: int = PAIRS_AT_ONCE.default  # 0: automatic (perfci/engine/lockstep.pairs_at_once)
    extra: int = AB_DEFAULTS.extra
    looks: int = AB_DEFAULTS.looks
    budget_s: float = AB_DEFAULTS.budget_s
    # both
    sample_budget_s: float | None = None
    rounds: int | None = None
    step_summary: Path | None = None  # default $GITHUB_STEP_SUMMARY
    github_output: Path | None = None  # default $GITHUB_OUTPUT
    # A/B of environments (docs/ci.md, "Gating library upgrades"): each side's interpreter or venv folder
    base_python: Path | None = None
    head_python: Path | None = None
    allow_missing: bool = False  # baseline cases without a candidate pass (compare/coverage.py)

    @property
    def environments(self) -> bool:
        return self.base_python is not None or self.head_python is not None


@dataclass(frozen=True)
class CIPlan:
    mode: str  # ab | baseline
    base_rev: str | None  # for ab
    ingest: bool  # for baseline: add the run to the history store
    where: CIEnvironment


@dataclass(frozen=True)
class CIOutcome:
    plan: CIPlan
    comparison: Comparison | None
    run: RunResult  # the candidate (A/B: the head side)
    out_dir: Path
    code: ExitCode  # the gate's code (before --report-only)
    ingested: Ingested | None = None  # when added to the history store

    @property
    def verdict(self) -> str:
        """`pass`, `regression`, `missing` (the gate failed on baseline cases not measured, and on nothing else),
        `no-baseline` (measured, nothing compared: never said `pass`) or `error`."""
        if self.code is ExitCode.OK and self.comparison is None:
            return "no-baseline"
        failing = self.comparison.failing if self.comparison is not None else ()
        if self.code is ExitCode.REGRESSION and failing and all(r.verdict is Verdict.MISSING for r in failing):
            return "missing"
        return VERDICT_WORDS.get(self.code, "error")


def _git_out(repo: Path, *args: str) -> str | None:
    """`git ARGS`' output in `repo`, stripped; None where git fails or is missing."""
    try:
        proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _rev_exists(repo: Path, rev: str) -> bool:
    return _git_out(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}") is not None


def refuse_the_base_as_head(repo: Path, base_rev: str, event: str | None) -> None:
    """A pull request's A/B whose checkout is its base commit, unchanged, compares the base with itself and passes
    without measuring the pull request (`pull_request_target` checks out the base branch): refused."""
    head = _git_out(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    base = _git_out(repo, "rev-parse", "--verify", "--quiet", f"{base_rev}^{{commit}}")
    if head is None or head != base or _git_out(repo, "status", "--porcelain", "--untracked-files=no") != "":
        return
    raise UsageError(
        f"perfci ci: the checkout is the {event} event's base itself ({base_rev}, commit {head[:12]}): the A/B "
        "would compare the base with itself and pass without measuring the pull request.",
        hint="check out the merge group's code, e.g. actions/checkout with "
        "`ref: ${{ github.event.merge_group.head_sha }}`"
        if event == "merge_group"
        else "check out the pull request's code, e.g. actions/checkout with "
        "`ref: ${{ github.event.pull_request.head.sha }}` (pull_request_target checks out the base branch)",
    )


def base_revision(base: str, repo: Path, given: bool = False) -> str:
    """The revision to compare with. A base branch from GitHub (GITHUB_BASE_REF, the event payload): `origin/<base>`
    when that remote-tracking branch exists (a CI checkout has no local branch of it), else `<base>`. A base the
    user `given` (`--base REV`): as given when it names a revision here (`--base HEAD~1` was taken as
    `origin/HEAD~1`, another commit, without a word), else `origin/<base>` when that exists."""
    remote = f"origin/{base}"
    if given and _rev_exists(repo, base):
        return base
    return remote if not base.startswith("origin/") and _rev_exists(repo, remote) else base


def plan_ci(settings: Settings, req: CIRequest, repo: Path | None = None) -> CIPlan:
    """Which gate to run, from the flags and the GitHub Actions environment."""
    if req.mode not in MODES:
        raise UsageError(f"--mode {req.mode!r}: expected one of {', '.join(MODES)}.")
    where = settings.ci_environment(req.base, req.step_summary, req.github_output)
    pull_request = where.event in PULL_REQUEST_EVENTS
    mode = req.mode
    if mode == "auto" and pull_request and not where.base_ref and not req.environments:
        # a gate on a pull request or merge group that silently measured without comparing passed everything
        raise UsageError(
            f"perfci ci: a {where.event} event needs a base revision to compare with, and none is known "
            f"({where.no_base_reason()}).",
            hint="pass --base REV, or --mode baseline to compare with the stored baseline",
        )
    if mode == "auto":
        mode = "ab" if (req.base or (pull_request and where.base_ref) or req.environments) else "baseline"
    if mode == "ab":
        if req.environments and not req.base:  # the same revision (the working tree) in both environments
            return CIPlan("ab", None, False, where)
        if not where.base_ref:
            raise UsageError(
                "perfci ci: an A/B needs a base revision, and none is known.",
                hint="pass --base REV (GitHub Actions sets GITHUB_BASE_REF on pull requests)",
            )
        base_rev = base_revision(where.base_ref, repo or Path.cwd(), given=req.base is not None)
        if pull_request and req.base is None:
            refuse_the_base_as_head(repo or Path.cwd(), base_rev, where.event)
        return CIPlan("ab", base_rev, False, where)
    wants_ingest = settings.store_configured(req.db) and (where.event == "push" or not where.github)
    return CIPlan("baseline", None, wants_ingest, where)


def run_ci(
    settings: Settings,
    req: CIRequest,
    env: Mapping[str, str],
    progress: ProgressFn | None = None,
    check_out_dir: Callable[[Path], None] | None = None,
    plan: CIPlan | None = None,
    notify: Callable[[str], None] = lambda message: None,
) -> CIOutcome:
    """Run the planned gate; write its files under `req.out`. An A/B with nothing named measures the project's
    conventional folders, its workloads and its pytest benchmarks (perfci.api.ab.choose_sources; `notify` is told
    which), or stops with a usage error; a run keeps `perfci run`'s built-in default suite."""
    plan = plan or plan_ci(settings, req)
    if req.out == CI_OUT:  # the default: ignored by git, as .perfci/ is (an --out the user names is theirs)
        mark_new_output_folder(req.out)
    decision = DecisionOptions(threshold=req.threshold)
    if plan.mode == "ab":
        ab_req = ABRequest(
            base_rev=plan.base_rev,
            sources=req.sources,
            pairs=req.pairs,
            pairs_at_once=req.pairs_at_once,
            extra=req.extra,
            looks=req.looks,
            budget_s=req.budget_s,
            sample_budget_s=req.sample_budget_s,
            decision=decision,
            out=req.out,
            shard=req.shard,
            base_python=req.base_python,
            head_python=req.head_python,
            allow_missing=req.allow_missing,
        )
        result = ab(settings, ab_req, env, progress, check_out_dir, notify)
        return CIOutcome(plan, result.comparison, result.outcome.head, req.out, result.exit_code())
    if plan.ingest:  # a store URL that could never work is refused before measuring, not after
        settings.store_url(req.db)
    paths, tests, suites = run_sources(settings, req.sources, notify)
    run_req = RunRequest(
        paths=paths, pytest=tests, patterns=req.sources.patterns, suites=suites, out=req.out,
        rounds=req.rounds, budget_s=req.sample_budget_s, runner=req.runner, threshold=req.threshold, db=req.db,
        shard=req.shard, allow_missing=req.allow_missing,
    )  # fmt: skip
    planned = plan_run(settings, run_req)
    if check_out_dir is not None:
        check_out_dir(planned.out_dir)
    if planned.baseline is None:  # said before measuring: which file was looked for, and the ones that exist
        notify(
            f"{no_baseline_note(planned.baseline_path, planned.runner)}: this run is measured, and nothing is "
            "compared; `perfci baseline update` stores one"
        )
    with output_folder_lock(planned.out_dir):
        measured = measure(planned, planned.choice.cases, progress)
        outcome = finish_run(settings, run_req, planned, measured, env)
    done = CIOutcome(plan, outcome.comparison, outcome.result, req.out, outcome.exit_code())
    # a shard is not a whole run: the history keeps the merged file (`perfci merge`, then `perfci history ingest`)
    whole = outcome.result.settings.get("complete") is not False and not outcome.result.settings.get("shard")
    if plan.ingest and whole:
        done = replace(done, ingested=ingest(settings, [req.out / "results.json"], req.db, req.runner))
    return done


def run_sources(
    settings: Settings, sources: Sources, notify: Callable[[str], None]
) -> tuple[list[Path], list[Path], list[str]]:
    """What a run measures: paths, pytest paths and suites, as the A/B chooses them (perfci.api.ab.choose_sources):
    given or configured, else the project's conventional folders (`notify` is told which); nothing is a usage
    error, never a silent fall-back to the built-in suite."""
    chosen = choose_sources(settings, sources)
    if chosen.conventional is None:
        return list(chosen.paths), list(chosen.pytest), list(chosen.suites)
    found = conventional_sources(chosen.conventional)
    if not found:
        raise nothing_to_measure(chosen.conventional, "--path")
    notify(f"no workload paths given or configured: measuring the project's {found.describe(chosen.conventional)}")
    return list(found.workloads), list(found.pytest), []


# --- GitHub workflow commands (https://docs.github.com/actions: "Workflow commands for GitHub Actions") ---


def escape_data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF are percent-encoded, so a case id cannot end the command
    or start another one."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (title=...): as data, plus `:` and `,`."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(kind: str, message: str, title: str) -> str:
    return f"::{kind} title={escape_property(title)}::{escape_data(message)}"


def _change(ratio: float | None) -> str:
    return f"{(ratio - 1) * 100:+.1f}%" if ratio is not None else "changed"


def workflow_annotations(outcome: CIOutcome, report_only: bool = False) -> list[str]:
    """One `::error` per regressed case and metric (`::warning` when report-only or covered by a declared
    expected change), one per failed case, one `::warning` per inconclusive case and per warning."""
    lines: list[str] = []
    fail_kind = "warning" if report_only else "error"
    report = outcome.out_dir / "report.html"
    if outcome.comparison is not None:
        for r in outcome.comparison.rows:
            interval = (
                f" (interval {format_change_interval(r.ratio_low, r.ratio_high, r.baseline, r.unit)})"
                if r.ratio_low is not None and r.ratio_high is not None
                else ""
            )
            if r.verdict is Verdict.REGRESSION:
                kind = "warning" if r.expected else fail_kind
                what = "expected regression" if r.expected else "regression"
                note = f"; {r.note}" if r.note else ""  # e.g. beyond the declared expected change
                message = f"{r.case_id}: {r.metric} {_change(r.ratio)}{interval}{note}; see {report}"
                lines.append(workflow_command(kind, message, f"perfci {what}: {r.case_id}"))
            elif r.verdict is Verdict.ERROR:
                lines.append(workflow_command(fail_kind, f"{r.case_id}: {r.note}", f"perfci error: {r.case_id}"))
            elif r.verdict is Verdict.MISSING:  # fails the gate unless allowed (`expected` says why)
                why = r.expected or r.note or "in the baseline, not measured"
                kind = "warning" if r.expected else fail_kind
                lines.append(workflow_command(kind, f"{r.case_id}: {why}", f"perfci missing: {r.case_id}"))
            elif r.verdict is Verdict.INCONCLUSIVE:
                why = f"; {r.note}" if r.note else f"; see {report}"  # it ended in "not settled; " with no note
                message = f"{r.case_id}: {r.metric} {_change(r.ratio)}{interval} not settled{why}"
                lines.append(workflow_command("warning", message, f"perfci inconclusive: {r.case_id}"))
            elif r.verdict in BELOW_THRESHOLD_WORSE:  # below the threshold: an error only with fail_on = "slower"
                gating = outcome.comparison.settings.get("fail_on") == "slower" and not r.expected
                message = f"{r.case_id}: {r.metric} {_change(r.ratio)}{interval}, below the threshold; see {report}"
                kind = fail_kind if gating else "warning"
                lines.append(workflow_command(kind, message, f"perfci {r.verdict.value}: {r.case_id}"))
        lines += [workflow_command("warning", w, "perfci") for w in outcome.comparison.warnings]
    else:
        for c in outcome.run.cases:
            if c.status is CaseStatus.ERROR:
                message = f"{c.id}: {c.errors[0].message if c.errors else 'failed'}"
                lines.append(workflow_command(fail_kind, message, f"perfci error: {c.id}"))
    if len(lines) > MAX_ANNOTATIONS:
        more = len(lines) - MAX_ANNOTATIONS
        lines = [*lines[:MAX_ANNOTATIONS], workflow_command("warning", f"{more} more: see {report}", "perfci")]
    return lines


def counts(outcome: CIOutcome) -> dict[str, int]:
    rows = outcome.comparison.rows if outcome.comparison is not None else ()

    def cases(verdict: Verdict) -> int:
        return len({r.case_id for r in rows if r.verdict is verdict and not r.expected})

    failed = {c.id for c in outcome.run.cases if c.status is CaseStatus.ERROR}
    failed |= {r.case_id for r in rows if r.verdict is Verdict.ERROR}
    return {
        "cases": len(outcome.run.cases),
        "regressions": cases(Verdict.REGRESSION),
        "improvements": cases(Verdict.IMPROVEMENT),
        "inconclusive": cases(Verdict.INCONCLUSIVE),
        "slower": cases(Verdict.SLOWER),
        "missing": cases(Verdict.MISSING),  # baseline cases not measured that fail the gate (allowed ones left out)
        "errors": len(failed),
    }


def outputs(outcome: CIOutcome) -> dict[str, str]:
    """The step outputs: verdict, counts, the mode, and the paths of the report, summary and results."""
    out = outcome.out_dir
    values = {"verdict": outcome.verdict, "exit-code": str(int(outcome.code)), "mode": outcome.plan.mode}
    values.update({k: str(v) for k, v in counts(outcome).items()})
    values.update(
        {
            "report": str(out / "report.html"),
            "summary": str(out / "summary.md"),
            "results": str(out / ("head/results.json" if outcome.plan.mode == "ab" else "results.json")),
            "out-dir": str(out),
        }
    )
    return values


def _output_lines(values: dict[str, str]) -> str:
    lines = []
    for key, value in values.items():
        if "\n" in value or "\r" in value:  # multi-line values need a delimiter that the value does not hold
            delimiter = "PERFCI_EOF"
            while delimiter in value:
                delimiter += "_"
            lines += [f"{key}<<{delimiter}", value, delimiter]
        else:
            lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def publish_failure(where: CIEnvironment, message: str, code: int) -> list[Path]:
    """A gate that stopped before it had a verdict (a usage error, exit 2; the machinery, exit 3): the outputs say
    `verdict=error` and the exit code, and the step summary says why (they were left empty: the action's `verdict`
    output read ""). Files that cannot be written are left alone: the error itself is what the log shows."""
    written = []
    for path, text in (
        (where.step_summary, f"### perfci: ERROR: {message}\n\n"),
        (where.output, _output_lines({"verdict": "error", "exit-code": str(code)})),
    ):
        if path is None:
            continue
        try:
            with path.open("a", encoding="utf-8") as f:
                f.write(text)
        except OSError:
            continue
        written.append(path)
    return written


def error_annotation(message: str) -> str:
    """The `::error` workflow command of a gate that stopped before its verdict."""
    return f"::error title={escape_property('perfci')}::{escape_data(message)}"


def publish(outcome: CIOutcome) -> list[Path]:
    """Append the summary to the step summary file and the outputs to the outputs file (each when known);
    return the files written. A write that fails names its file (a full disk said only "No space left on
    device")."""
    written = []
    where = outcome.plan.where
    summary = outcome.out_dir / "summary.md"
    if where.step_summary is not None and summary.exists():
        _append(where.step_summary, summary.read_text("utf-8").rstrip("\n") + "\n\n", "the step summary")
        written.append(where.step_summary)
    if where.output is not None:
        _append(where.output, _output_lines(outputs(outcome)), "the outputs file")
        written.append(where.output)
    return written


def _append(path: Path, text: str, what: str) -> None:
    try:
        with path.open("a", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise InfrastructureError(f"could not write {what} {path}: {exc.strerror or exc}.") from None
