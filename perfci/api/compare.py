"""Comparing results: decision settings from options and configuration, two files (or one against
baselines/<runner>.json), expected changes, the learned cross-job noise, and the files a comparison writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfci.ab.confirm import flagged_cases
from perfci.api.settings import Settings
from perfci.compare.baselines import load_baseline
from perfci.compare.coverage import Scope, allow_missing
from perfci.compare.decide import check_comparable, compare_runs
from perfci.compare.expected import EXPECTED_FILE, apply_expected, load_expected
from perfci.compare.gate import ExitCode, gate
from perfci.compare.policy import DEFAULT_METRICS, DecisionSettings, practical_threshold
from perfci.errors import UsageError
from perfci.format.comparison import comparison_to_dict, dump_comparison
from perfci.format.jsonfile import json_text
from perfci.format.model import Comparison, RunResult
from perfci.format.schema import load_results
from perfci.fractions import check_fraction
from perfci.metrics.registry import metric_def
from perfci.reports.decisions import BY_TIME, DecisionView

if TYPE_CHECKING:
    from perfci.compare.history_noise import HistoryNoise

# Imported where they are used, not here: `perfci compare --format json` needs neither the history store
# (SQLAlchemy: a quarter of a second of imports) nor the report writers (jinja2) (docs/scale.md).


def unpaired_remedy(unsettled: Sequence[str]) -> str:
    """What settles cases that results from separate jobs could not: both revisions measured on one machine. Cases
    of pytest tests (`FILE::test@device`) name their files, which `perfci ab` measures when given `--pytest`."""
    files = sorted({case.split("::", 1)[0] for case in unsettled if "::" in case})
    pytest = "".join(f" --pytest {f}" for f in files[:3]) + (" ..." if len(files) > 3 else "")
    return f"To settle them, measure both revisions on one machine: `perfci ab BASE_REV{pytest}`."


def unsettled_note(unsettled: Sequence[str], remedy: str, comparison: Comparison | None = None) -> str | None:
    """The note for cases that results from separate jobs could not settle (cross-job noise), None for none. With
    the comparison, the regressions among them are counted apart (the headline already counts them as failing:
    "4 not settled" beside "2 regressions" read as a contradiction)."""
    if not unsettled:
        return None
    failing = {r.case_id for r in comparison.failing} if comparison is not None else set()
    regressions = sum(1 for case in unsettled if case in failing)
    which = f" ({regressions} of them regressions whose interval reaches below it)" if regressions > 0 else ""
    return (
        f"note: {len(unsettled)} case(s) not settled at the practical threshold{which}: results from separate jobs "
        f"differ by more than that from job to job on this kind of runner (cross-job noise). {remedy}"
    )


def comparison_document(comparison: Comparison) -> dict[str, Any]:
    """The comparison as its comparison.json document (what `--format json` prints)."""
    return comparison_to_dict(comparison)


def comparison_json(comparison: Comparison) -> str:
    """The comparison.json document as text, indented by two spaces (what `--format json` prints)."""
    return json_text(comparison_to_dict(comparison))


@dataclass(frozen=True, kw_only=True)
class DecisionOptions:
    """The comparison options a user can give (flags), before the configuration fills in the rest."""

    threshold: float | None = None
    confidence: float = 0.99
    family: str = "none"
    metrics: tuple[str, ...] = ()
    job_noise: float | None = None
    catch: float = 0.75
    fail_on: str | None = None  # --fail-on (None: configuration, then "regression")


def checked_fraction(flag: str, value: float | None) -> float | None:
    """`value` when it is None or a fraction within the options table's bounds (perfci/fractions.py); UsageError
    naming the flag otherwise."""
    try:
        return None if value is None else check_fraction(value)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}.") from None


def decision_settings(settings: Settings, opts: DecisionOptions) -> DecisionSettings:
    if opts.family not in ("none", "bonferroni"):
        raise UsageError(f"--family must be 'none' or 'bonferroni', not {opts.family!r}.")
    if not 0.5 < opts.confidence < 1.0:
        raise UsageError("--confidence must lie between 0.5 and 1.")
    if not 0.5 <= opts.catch < 1.0:
        raise UsageError("--catch must lie in [0.5, 1).")
    threshold = settings.threshold(checked_fraction("--threshold", opts.threshold))
    checked_fraction("--job-noise", opts.job_noise)
    for name in opts.metrics:
        try:
            metric_def(name)
        except ValueError as exc:
            raise UsageError(f"--metric: {exc}.") from None
    return DecisionSettings(
        catch=opts.catch,
        threshold=threshold,
        confidence=opts.confidence,
        family=opts.family,
        metrics=tuple(opts.metrics or DEFAULT_METRICS),
        thresholds=dict(settings.cfg.thresholds),
        job_noise=opts.job_noise,
        fail_on=settings.fail_on(opts.fail_on),
    )


def noise_lookup(
    settings: Settings,
    flag: bool | None,
    db: str | None,
    runner: str,
    job_noise: float | None = None,
    candidate_run: str | None = None,
) -> HistoryNoise | None:
    """The `--history-noise` lookup for unpaired comparisons (None when off); opens and checks the store. The
    candidate's own run, where it is stored already, is left out of the noise it is judged by."""
    if not settings.history_noise(flag, job_noise):
        return None
    from perfci.compare.history_noise import HistoryNoise
    from perfci.store.history import HistoryStore

    return HistoryNoise(HistoryStore(settings.store_url(db), create=False), runner, exclude_run=candidate_run)


def with_noise_note(comparison: Comparison, lookup: HistoryNoise | None) -> Comparison:
    """Add the history-noise summary to the comparison's warnings (shown in every report)."""
    note = lookup.summary() if lookup is not None else None
    return replace(comparison, warnings=(*comparison.warnings, note)) if note else comparison


def with_unmatched_metrics(comparison: Comparison, asked: Sequence[str]) -> Comparison:
    """A warning for each metric asked for by name (`--metric`) that no row compares: with another metric that
    did, the comparison passed on it alone without a word (alone, it is a usage error: compare/coverage.py)."""
    compared = {r.metric for r in comparison.rows}
    unmatched = [m for m in dict.fromkeys(asked) if m not in compared]
    said = [f"--metric {m}: compared in no case (no case of both runs has it)" for m in unmatched]
    return replace(comparison, warnings=(*comparison.warnings, *said)) if said else comparison


def unsettled_cases(
    comparison: Comparison, decision: DecisionSettings, method: str = "unpaired", for_confirmation: bool = False
) -> list[str]:
    """Cases whose timed rows from the `method` rule leave a change past the practical threshold possible; a
    regression whose whole interval lies past it is settled, except `for_confirmation` (`run --confirm`
    re-measures every regression of separate jobs by A/B before it fails the gate)."""
    by_method = replace(comparison, rows=tuple(r for r in comparison.rows if r.method == method))
    theta = lambda case, metric: practical_threshold(decision, case, metric_def(metric))  # noqa: E731
    return flagged_cases(by_method, theta, clear_regressions=not for_confirmation)


def scope(allow: bool) -> Scope:
    """The coverage rule's scope for a comparison of files: `--allow-missing` (what the candidate left out on
    purpose is read from its file)."""
    return Scope(allow_missing=allow)


def with_allowed_missing(comparison: Comparison, allow: bool) -> Comparison:
    """`--allow-missing` applied to a comparison decided without it (an A/B's looks, a rolling baseline)."""
    return allow_missing(comparison) if allow else comparison


def check_expected(expected: Path | None) -> None:
    """The expected-changes file read and checked now (`--expected`, else ./perfci-expected.toml when it exists):
    a command that measures first refuses a malformed file before it measures (found after an A/B's minutes)."""
    load_expected(expected or Path(EXPECTED_FILE), expected is not None)


def with_expected(comparison: Comparison, expected: Path | None) -> Comparison:
    """Apply the expected-changes file (`--expected`, else ./perfci-expected.toml when it exists)."""
    return apply_expected(comparison, load_expected(expected or Path(EXPECTED_FILE), expected is not None))


@dataclass(frozen=True, kw_only=True)
class Outputs:
    """Where a comparison's files go: `out` gets comparison.json, report.html, junit.xml and summary.md."""

    out: Path | None = None
    junit: Path | None = None
    html: Path | None = None
    decisions: DecisionView = BY_TIME  # --rank, --max-memory of the decision tables

    @property
    def asked(self) -> bool:
        return self.out is not None or self.junit is not None or self.html is not None


def bound_outputs(outputs: Outputs, candidate: RunResult | None) -> Outputs:
    """`outputs` with the candidate's decision tables worked out once where files are asked for (the terminal
    shows the same tables); as they are where none is (a `--format json` run shows none)."""
    return replace(outputs, decisions=outputs.decisions.for_run(candidate)) if outputs.asked else outputs


def write_outputs(
    outputs: Outputs, comparison: Comparison, candidate: RunResult | None, baseline: RunResult | None
) -> list[Path]:
    """Write the comparison's files; return the main ones written (for the CLI to name)."""
    if not outputs.asked:
        return []  # not even the report writers' imports (jinja2: a tenth of a second)
    from perfci.reports.html import write_html
    from perfci.reports.junit import write_junit
    from perfci.reports.markdown import write_markdown

    outputs = bound_outputs(outputs, candidate)  # already bound by compare_files: then as it is
    written: list[Path] = []
    if outputs.out is not None:
        dump_comparison(comparison, outputs.out / "comparison.json")
        write_html(outputs.out / "report.html", candidate, comparison, baseline, outputs.decisions)
        write_junit(outputs.out / "junit.xml", comparison)
        write_markdown(outputs.out / "summary.md", candidate, comparison, baseline, outputs.decisions)
        written += [outputs.out / "comparison.json", outputs.out / "report.html"]
    if outputs.junit is not None:
        write_junit(outputs.junit, comparison)
    if outputs.html is not None:
        write_html(outputs.html, candidate, comparison, baseline, outputs.decisions)
    return written


@dataclass(frozen=True)
class CompareOutcome:
    comparison: Comparison
    baseline: RunResult
    candidate: RunResult
    runner: str
    unsettled: list[str]  # cases the unpaired rule could not settle at the practical threshold
    written: list[Path]
    decisions: DecisionView = BY_TIME  # the view the files used, its tables worked out once where files were written

    def exit_code(self) -> ExitCode:
        return gate(self.comparison)


@dataclass(frozen=True, kw_only=True)
class CompareRequest:
    baseline: Path  # alone: the candidate, compared with baselines/<runner>.json
    candidate: Path | None = None
    runner: str | None = None
    decision: DecisionOptions = field(default_factory=DecisionOptions)
    history_noise: bool | None = None
    db: str | None = None
    allow_mismatch: bool = False
    allow_missing: bool = False  # baseline cases without a candidate pass (compare/coverage.py)
    expected: Path | None = None
    outputs: Outputs = field(default_factory=Outputs)
    store_baseline: str | None = None  # `--baseline store:BRANCH[:N]`: `baseline` is then the candidate
    candidate_label: str | None = None  # how messages name the candidate (else its path)


def check_finished(run: RunResult, label: str) -> None:
    """Refuse (exit 2) a run whose file was written part-way (`settings.complete` false: interrupted): its cases
    hold the rounds done by then, some one round or none, and a gate that compared them would pass on a run that
    never ended, as `baseline update`, `history ingest` and `merge` refuse it."""
    if run.settings.get("complete") is False:
        from_pytest = run.settings.get("source") == "pytest"
        raise UsageError(
            f"{label}: the run did not complete (interrupted: settings.complete is false); a run written part-way "
            "is not compared.",
            hint="run the pytest session again: its end writes the whole file"
            if from_pytest
            else "`perfci run --resume --out DIR` (with the run's other options) completes it",
        )


def compare_with_store(settings: Settings, req: CompareRequest) -> CompareOutcome:
    """`perfci compare CANDIDATE --baseline store:main[:N]`: the candidate against the latest N runs of the branch
    on its runner class in the history store, with the cross-job noise learned there (compare/rolling_baseline.py)."""
    from perfci.compare.history_noise import HistoryNoise
    from perfci.compare.rolling_baseline import compare_rolling, load_rolling, parse_store_baseline
    from perfci.store.history import HistoryStore

    spec = parse_store_baseline(req.store_baseline or "")
    if spec is None or req.candidate is not None:
        raise UsageError(
            f"--baseline {req.store_baseline!r}: give the candidate alone and --baseline store:BRANCH[:N].",
            hint="e.g. perfci compare results.json --baseline store:main:10",
        )
    cand = load_results(req.baseline)
    check_finished(cand, str(req.baseline))
    name = settings.runner_class(req.runner, cand.fingerprint)
    decision = decision_settings(settings, req.decision)
    store = HistoryStore(settings.store_url(req.db), create=False)
    window = load_rolling(store, spec, name, decision.metrics)
    lookup = None if req.decision.job_noise is not None else HistoryNoise(store, name, exclude_run=cand.run_id)
    decision = replace(decision, job_noise_lookup=lookup)
    compared, base = compare_rolling(window, cand, decision, str(req.baseline), req.allow_mismatch)
    compared = with_allowed_missing(compared, req.allow_missing)
    comparison = with_expected(with_noise_note(compared, lookup), req.expected)
    outputs = bound_outputs(req.outputs, cand)
    written = write_outputs(outputs, comparison, cand, base)
    return CompareOutcome(
        comparison, base, cand, name, unsettled_cases(comparison, decision), written, outputs.decisions
    )


def compare_files(settings: Settings, req: CompareRequest) -> CompareOutcome:
    """`perfci compare`: load, check comparability, decide, apply expected changes, write the outputs."""
    if req.store_baseline is not None:
        return compare_with_store(settings, req)
    if req.candidate is None:
        cand = load_results(req.baseline)
        name = settings.runner_class(req.runner, cand.fingerprint)
        base, labels = load_baseline(name), (f"baselines/{name}.json", str(req.baseline))
    else:
        base, cand = load_results(req.baseline), load_results(req.candidate)
        labels = (str(req.baseline), req.candidate_label or str(req.candidate))
        name = settings.runner_class(req.runner, cand.fingerprint)
    for run, label in ((base, labels[0]), (cand, labels[1])):
        check_finished(run, label)
    check_comparable(base, cand, req.allow_mismatch)
    decision = decision_settings(settings, req.decision)
    lookup = noise_lookup(settings, req.history_noise, req.db, name, req.decision.job_noise, cand.run_id)
    decision = replace(decision, job_noise_lookup=lookup)
    compared = with_noise_note(compare_runs(base, cand, decision, labels, scope=scope(req.allow_missing)), lookup)
    compared = with_unmatched_metrics(compared, req.decision.metrics)
    comparison = with_expected(compared, req.expected)
    outputs = bound_outputs(req.outputs, cand)
    written = write_outputs(outputs, comparison, cand, base)
    return CompareOutcome(
        comparison, base, cand, name, unsettled_cases(comparison, decision), written, outputs.decisions
    )
