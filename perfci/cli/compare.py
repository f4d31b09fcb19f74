"""`perfci compare`, `perfci ab`, `perfci baseline update|show`.

Both comparing commands print the verdict table (or `--format json`: the saved-comparison document), and with
`--out DIR` write `comparison.json` (perfci.compare.saved), `report.html`, `summary.md` and `junit.xml` there;
`--junit PATH` writes JUnit XML anywhere. Exit codes: 0 no regression, 1 regression, 2 usage/input error, 3 failures.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress, TextColumn, TimeElapsedColumn

from perfci.api.settings import Settings, load_project_config
from perfci.cli.app import (
    DbOpt,
    HistoryNoiseOpt,
    OutputFormat,
    app,
    baseline_app,
    consoles,
    emit,
    guard,
    noise_lookup,
    with_noise_note,
    worker_cpus,
    writable_folder,
)
from perfci.compare.ab import ABOutcome, ABSettings, run_ab
from perfci.compare.baselines import latest_results, load_baseline, record, update_baseline
from perfci.compare.confirm import flagged_cases, merge_confirmation
from perfci.compare.decide import check_comparable, compare_runs
from perfci.compare.expected import EXPECTED_FILE, apply_expected, load_expected
from perfci.compare.gate import ExitCode, gate
from perfci.compare.policy import DEFAULT_METRICS, DecisionSettings, practical_threshold
from perfci.compare.revisions import checked_out, map_path, repo_root
from perfci.compare.saved import comparison_to_dict, dump_comparison
from perfci.config import Config
from perfci.engine.runner import RunSettings
from perfci.errors import UsageError
from perfci.metrics.registry import metric_def
from perfci.model import CaseResult, Comparison, RunResult
from perfci.patterns import case_pattern
from perfci.profilers.timing import TimingSettings
from perfci.reports.html import write_html
from perfci.reports.junit import write_junit
from perfci.reports.markdown import write_markdown
from perfci.reports.terminal import comparison_table, verdict_line
from perfci.schema import load_results
from perfci.workloads.discovery import builtin_source, expand_paths
from perfci.workloads.selection import Selection

Thr = Annotated[float | None, typer.Option(help="Practical threshold for timed metrics (0.03 = 3%).")]
Conf = Annotated[float, typer.Option(help="One-sided confidence per case and metric.")]
Family = Annotated[str, typer.Option(help="Across cases: none (theta controls the family) or bonferroni.")]
Catch = Annotated[
    float, typer.Option(help="Probability of flagging a change of exactly the threshold (0.5: estimate >= theta).")
]
Metrics = Annotated[list[str] | None, typer.Option("--metric", help="Metric to compare (repeatable).")]
Out = Annotated[Path | None, typer.Option(help="Write comparison.json, report.html and junit.xml here.")]
Junit = Annotated[Path | None, typer.Option(help="Write JUnit XML here.")]
Expected = Annotated[Path | None, typer.Option(help=f"Expected-changes file (default ./{EXPECTED_FILE}).")]
ExitZero = Annotated[bool, typer.Option("--exit-zero", help="Report only; always exit 0.")]
Fmt = Annotated[OutputFormat, typer.Option("--format")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="Configuration file.")]


def decision_settings(
    cfg: Config,
    threshold: float | None,
    confidence: float,
    family: str,
    metrics: list[str] | None,
    job_noise: float | None = None,
    catch: float = 0.75,
) -> DecisionSettings:
    if family not in ("none", "bonferroni"):
        raise UsageError(f"--family must be 'none' or 'bonferroni', not {family!r}.")
    if not 0.5 < confidence < 1.0:
        raise UsageError("--confidence must lie between 0.5 and 1.")
    if not 0.5 <= catch < 1.0:
        raise UsageError("--catch must lie in [0.5, 1).")
    return DecisionSettings(
        catch=catch,
        threshold=threshold,
        confidence=confidence,
        family=family,
        metrics=tuple(metrics or DEFAULT_METRICS),
        thresholds=dict(cfg.thresholds),
        job_noise=job_noise,
    )


def finish(
    comparison: Comparison, candidate: RunResult | None, out: Path | None, junit: Path | None,
    expected: Path | None, fmt: OutputFormat, baseline: RunResult | None = None,
) -> Comparison:  # fmt: skip
    """Apply expected changes, print, write the outputs; return the final comparison."""
    comparison = apply_expected(comparison, load_expected(expected or Path(EXPECTED_FILE), expected is not None))
    emit(fmt, lambda: comparison_to_dict(comparison), lambda: comparison_table(comparison))
    _, err = consoles()
    for w in comparison.warnings:
        err.print(f"warning: {w}", highlight=False, markup=False, soft_wrap=True)
    err.print(verdict_line(comparison, candidate), highlight=False)
    if out is not None:
        dump_comparison(comparison, out / "comparison.json")
        write_html(out / "report.html", candidate, comparison, baseline)
        write_junit(out / "junit.xml", comparison)
        write_markdown(out / "summary.md", candidate, comparison, baseline)
        err.print(f"comparison: {out / 'comparison.json'}\nreport:     {out / 'report.html'}", highlight=False)
    if junit is not None:
        write_junit(junit, comparison)
    return comparison


def unsettled_cases(comparison: Comparison, decision: DecisionSettings, method: str = "unpaired") -> list[str]:
    """Cases whose timed rows from the `method` rule leave a change past the practical threshold possible."""
    by_method = replace(comparison, rows=tuple(r for r in comparison.rows if r.method == method))
    return flagged_cases(by_method, lambda case, metric: practical_threshold(decision, case, metric_def(metric)))


def print_unsettled_hint(comparison: Comparison, decision: DecisionSettings, remedy: str) -> None:
    """One note on stderr when results from separate jobs could not settle some cases (cross-job noise)."""
    cases = unsettled_cases(comparison, decision)
    if cases:
        _, err = consoles()
        err.print(
            f"note: {len(cases)} case(s) not settled at the practical threshold: results from separate jobs differ "
            f"by more than that from job to job on this kind of runner (cross-job noise). {remedy}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


@app.command()
def compare(
    baseline: Annotated[Path, typer.Argument(help="Baseline results file (or, alone, the candidate).")],
    candidate: Annotated[Path | None, typer.Argument(help="Candidate results file.")] = None,
    runner: Annotated[str | None, typer.Option(help="Runner class, when comparing with baselines/.")] = None,
    threshold: Thr = None,
    confidence: Conf = 0.99,
    family: Family = "none",
    catch: Catch = 0.75,
    job_noise: Annotated[
        float | None, typer.Option(help="Cross-job noise, sd of the log per-job shift [default: 0.10 CPU, 0.03 GPU].")
    ] = None,
    history_noise: HistoryNoiseOpt = None,
    db: DbOpt = None,
    metric: Metrics = None,
    allow_mismatch: Annotated[bool, typer.Option(help="Compare runs from different hardware anyway.")] = False,
    out: Out = None,
    html: Annotated[Path | None, typer.Option(help="Also write an HTML report here.")] = None,
    junit: Junit = None,
    expected: Expected = None,
    config: ConfigOpt = None,
    exit_zero: ExitZero = False,
    fmt: Fmt = OutputFormat.table,
) -> None:
    """Compare two results files (or one against baselines/<runner>.json); exit 1 on a regression."""

    def body() -> int:
        cfg = load_project_config(config)
        if candidate is None:
            cand = load_results(baseline)
            name = Settings(dict(os.environ), cfg).runner_class(runner, cand.fingerprint)
            base, labels = load_baseline(name), (f"baselines/{name}.json", str(baseline))
        else:
            base, cand = load_results(baseline), load_results(candidate)
            labels = (str(baseline), str(candidate))
            name = Settings(dict(os.environ), cfg).runner_class(runner, cand.fingerprint)
        check_comparable(base, cand, allow_mismatch)
        settings = decision_settings(cfg, threshold, confidence, family, metric, job_noise=job_noise, catch=catch)
        lookup = noise_lookup(history_noise, cfg, db, name, job_noise)
        settings = replace(settings, job_noise_lookup=lookup)
        compared = with_noise_note(compare_runs(base, cand, settings, labels), lookup)
        comparison = finish(compared, cand, out, junit, expected, fmt, base)
        remedy = "To settle them, measure both revisions on one machine: `perfci ab BASE_REV`."
        print_unsettled_hint(comparison, settings, remedy)
        if html is not None:
            write_html(html, cand, comparison, base)
        return ExitCode.OK if exit_zero else gate(comparison)

    guard(body)


def ab_sources(paths: list[Path] | None, cfg: Config, suites: list[str] | None, repo: Path, root: Path) -> list[str]:
    """Workload sources of one side: the given paths (else the configuration's) mapped into the side's checkout,
    plus built-in suites; the default suite when nothing is named."""
    user = paths or list(cfg.paths)
    mapped = [m for p in user if (m := map_path(p, repo, root)).exists()]
    sources = expand_paths(mapped) if mapped else []
    sources += [builtin_source(s) for s in suites or cfg.suites]
    return sources if (user or suites or cfg.suites) else [builtin_source("default")]


@app.command()
def ab(
    base_rev: Annotated[str, typer.Argument(help="Base revision (commit, branch, tag).")],
    head_rev: Annotated[str | None, typer.Argument(help="Head revision (default: the working tree as it is).")] = None,
    paths: Annotated[list[Path] | None, typer.Option("--path", help="Workload file or folder (repeatable).")] = None,
    patterns: Annotated[list[str] | None, typer.Option("-k", help="Case pattern (repeatable).")] = None,
    suites: Annotated[list[str] | None, typer.Option("--suite", help="Built-in suite (repeatable).")] = None,
    pairs: Annotated[int, typer.Option(min=2, help="Pairs of rounds in the first look.")] = 8,
    extra: Annotated[int, typer.Option(min=1, help="Pairs added per further look (undecided cases).")] = 6,
    looks: Annotated[int, typer.Option(min=1, help="Looks in all (alpha is split over them).")] = 3,
    budget: Annotated[float, typer.Option(help="Time budget of the whole A/B, seconds.")] = 900.0,
    sample_budget: Annotated[float | None, typer.Option(help="Sampling budget per case and round, s.")] = None,
    threads: Annotated[int | None, typer.Option(min=0, help="Threads per worker [default: 1].")] = None,
    cpus: Annotated[
        str | None, typer.Option("--cpus", help="CPUs both workers run on, e.g. 2-3 [default: the last --threads].")
    ] = None,
    timeout: Annotated[float | None, typer.Option(help="Per-case time-out in seconds.")] = None,
    seed: Annotated[int, typer.Option(help="Seed for pair order, round order and inputs.")] = 0,
    build: Annotated[str | None, typer.Option("--build", help="Build command run in each checkout.")] = None,
    threshold: Thr = None,
    confidence: Conf = 0.99,
    family: Family = "none",
    catch: Catch = 0.75,
    metric: Metrics = None,
    out: Out = None,
    junit: Junit = None,
    expected: Expected = None,
    config: ConfigOpt = None,
    exit_zero: ExitZero = False,
    fmt: Fmt = OutputFormat.table,
) -> None:
    """Same-machine A/B of two git revisions in lockstep pairs (the recommended PR gate)."""

    def body() -> int:
        cfg = load_project_config(config)
        try:
            compiled = tuple(case_pattern(p) for p in patterns or ())
        except ValueError as exc:
            raise UsageError(f"-k: {exc}.") from None
        out_dir = out or Path(".perfci") / "ab" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        writable_folder(out_dir, "--out")
        run_settings = RunSettings(
            rounds=pairs,
            seed=seed,
            threads=threads if threads is not None else (cfg.threads if cfg.threads is not None else 1),
            cpu_affinity=worker_cpus(cpus, cfg),
            case_timeout_s=timeout or cfg.case_timeout_s or 120.0,
            timing=replace(TimingSettings(), budget_s=sample_budget or cfg.budget_s or TimingSettings().budget_s),
        )
        settings = ABSettings(
            pairs=pairs, extra=extra, looks=looks, budget_s=budget, seed=seed, run=run_settings,
            decision=decision_settings(cfg, threshold, confidence, family, metric, catch=catch),
            build_command=build or cfg.build_command,
        )  # fmt: skip
        outcome = run_ab_cli(base_rev, head_rev, paths, cfg, suites, Selection(patterns=compiled), settings, out_dir)
        comparison = finish(outcome.comparison, outcome.head, out_dir, junit, expected, fmt, outcome.base)
        _, err = consoles()
        meta = comparison.settings.get("ab", {})
        err.print(
            f"A/B: {outcome.pairs_run} pairs in {outcome.looks_run} of {meta.get('looks_planned')} looks, "
            f"{outcome.elapsed_s:.0f} s; results: {out_dir / 'base'}, {out_dir / 'head'}",
            highlight=False,
            soft_wrap=True,
        )
        return ExitCode.OK if exit_zero else gate(comparison, outcome.head)

    guard(body)


def run_ab_cli(
    base_rev: str, head_rev: str | None, paths: list[Path] | None, cfg: Config, suites: list[str] | None,
    selection: Selection, settings: ABSettings, out_dir: Path, only: set[str] | None = None,
) -> ABOutcome:  # fmt: skip
    repo = repo_root(Path.cwd())
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="perfci-ab-") as tmp:
        work = Path(tmp)
        with checked_out(repo, "base", base_rev, work, env) as a, checked_out(repo, "head", head_rev, work, env) as b:
            sources = (
                ab_sources(paths, cfg, suites, repo, a.root),
                ab_sources(paths, cfg, suites, repo, b.root),
            )
            keep = (lambda cid: cid in only) if only is not None else (lambda cid: _keeps(selection, cid))
            _, err = consoles()
            columns = (TextColumn("{task.description}"), TimeElapsedColumn())
            with Progress(*columns, console=err, transient=True, disable=not err.is_terminal) as bar:
                task = bar.add_task("A/B: starting")

                def progress(message: str, done: int, total: int) -> None:
                    bar.update(task, description=f"A/B {message}"[:70])

                return run_ab(a, b, sources, settings, out_dir, select=keep, progress=progress)


def _keeps(selection: Selection, case_id: str) -> bool:
    return not selection.patterns or any(p.matches(case_id) for p in selection.patterns)


def confirm_flagged(
    comparison: Comparison,
    baseline: RunResult,
    paths: list[Path] | None,
    cfg: Config,
    suites: list[str] | None,
    out_dir: Path,
    run_settings: RunSettings,
    decision: DecisionSettings,
) -> Comparison:
    """`perfci run --confirm`: re-measure the flagged cases by A/B against the baseline's commit (see
    perfci.compare.confirm) with the same decision settings; without a commit in the baseline, say so and keep
    the comparison."""
    flagged = unsettled_cases(comparison, decision)
    if not flagged:
        return comparison
    commit = baseline.git.commit if baseline.git else None
    if not commit:
        warning = "--confirm: the baseline records no git commit, so flagged cases could not be re-measured"
        return replace(comparison, warnings=(*comparison.warnings, warning))
    _, err = consoles()
    err.print(f"confirming {len(flagged)} flagged case(s) by A/B against {commit[:12]} ...", highlight=False)
    settings = ABSettings(
        seed=run_settings.seed,
        run=run_settings,
        decision=decision,
        build_command=cfg.build_command,
    )
    wanted = set(flagged)
    outcome = run_ab_cli(commit, None, paths, cfg, suites, Selection(), settings, out_dir / "confirm", wanted)
    return merge_confirmation(comparison, outcome.comparison, commit[:12])


def stored_gate(
    comparison: Comparison,
    baseline: RunResult,
    confirm: bool,
    paths: list[Path] | None,
    cfg: Config,
    suites: list[str] | None,
    out_dir: Path,
    run_settings: RunSettings,
    decision: DecisionSettings,
) -> Comparison:
    """For `perfci run` against a stored baseline: confirm flagged cases by A/B when asked, apply declared
    expected changes, write comparison.json next to the report."""
    if confirm:
        comparison = confirm_flagged(comparison, baseline, paths, cfg, suites, out_dir, run_settings, decision)
    comparison = apply_expected(comparison, load_expected(Path(EXPECTED_FILE)))
    dump_comparison(comparison, out_dir / "comparison.json")
    return comparison


@baseline_app.command("update")
def baseline_update(
    results: Annotated[Path | None, typer.Argument(help="Results file (default: the latest perfci run).")] = None,
    reason: Annotated[str, typer.Option(help="Why these numbers are the new reference (recorded).")] = "",
    runner: Annotated[str | None, typer.Option(help="Runner class (default: $PERFCI_RUNNER, config, derived).")] = None,
    config: ConfigOpt = None,
) -> None:
    """Accept results as the baseline of their runner class: writes baselines/<runner>.json."""

    def body() -> int:
        cfg = load_project_config(config)
        source = results or latest_results()
        name = Settings(dict(os.environ), cfg).runner_class(runner, load_results(source).fingerprint)
        path, run = update_baseline(source, reason, name)
        _, err = consoles()
        err.print(f"baseline {path} <- {source} ({len(run.cases)} cases): {reason.strip()}", highlight=False)
        return 0

    guard(body)


@baseline_app.command("show")
def baseline_show(
    runner: Annotated[str | None, typer.Option(help="Runner class (default: this machine's).")] = None,
    config: ConfigOpt = None,
    fmt: Fmt = OutputFormat.table,
) -> None:
    """Show the stored baseline of a runner class: when, why, from which commit, and its cases."""

    def body() -> int:
        from perfci.profilers.fingerprint import fingerprint

        cfg = load_project_config(config)
        name = Settings(dict(os.environ), cfg).runner_class(runner, fingerprint() if not runner else {})
        run = load_baseline(name)
        rec = record(run)
        out, _ = consoles()
        cases = [{"id": c.id, "status": c.status.value, "latency.median": _median(c)} for c in run.cases]
        info = {
            "runner": name,
            "run_id": run.run_id,
            "commit": run.git.commit if run.git else None,
            "started_at": run.started_at,
            **{k: rec.get(k) for k in ("reason", "accepted_at", "source")},
        }
        if fmt is OutputFormat.json:
            out.print_json(json.dumps({**info, "cases": cases}))
            return 0
        for key, value in info.items():
            out.print(f"{key}: {value}", highlight=False, markup=False)
        for c in cases:
            med = c["latency.median"]
            shown = f"{med * 1e6:.2f} us" if isinstance(med, float) else c["status"]
            out.print(f"  {c['id']}: {shown}", highlight=False, markup=False)
        return 0

    guard(body)


def _median(case: CaseResult) -> float | None:
    m = case.metric("latency.median")
    return float(m.value) if m else None
