"""`perfci report` as a library call: which files were given (results or comparison, by their schema field),
and the run(s) and comparison to render from them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perfci.api.compare import DecisionOptions, decision_settings, scope
from perfci.api.settings import Settings
from perfci.compare.decide import compare_runs
from perfci.errors import ResultsFormatError, UsageError
from perfci.format.codec import document_schema
from perfci.format.comparison import SCHEMA_NAME as COMPARISON_SCHEMA
from perfci.format.comparison import decode_comparison
from perfci.format.jsonfile import read_bytes, write_text_atomic
from perfci.format.model import Comparison, RunResult
from perfci.format.schema import SCHEMA_NAME as RESULTS_SCHEMA
from perfci.format.schema import decode_results
from perfci.reports.decisions import BY_TIME, DecisionView
from perfci.reports.html import write_html
from perfci.reports.markdown import render_markdown


def _read(path: Path) -> tuple[str, bytes]:
    """The file's kind (from its "schema" field) and its bytes; a file that is not JSON is refused here, so that
    every file is parsed before any is checked."""
    data = read_bytes(path, "JSON")
    schema, foreign = document_schema(data, str(path))
    if schema == RESULTS_SCHEMA:
        return "results", data
    if schema == COMPARISON_SCHEMA:
        return "comparison", data
    raise ResultsFormatError(
        f"{path}: neither a perfci results file nor a comparison file (schema {schema!r}).",
        hint=foreign or "pass a results.json or comparison.json written by perfci",
    )


def _sides(comparison: Comparison, runs: list[RunResult]) -> tuple[RunResult | None, RunResult | None]:
    """Match results files to the comparison's sides by run id; otherwise by order (baseline first), for a
    comparison that records no run ids. A results file of another run is refused: its charts would sit beside
    verdicts it did not give."""
    ids = [getattr(comparison, side, {}).get("run_id") for side in ("baseline_run", "candidate_run")]
    if any(ids):
        for run in runs:
            if run.run_id not in ids:
                raise UsageError(
                    f"results of run {run.run_id!r} are not one of the runs this comparison compared "
                    f"({' and '.join(repr(i) for i in ids if i)}).",
                    hint="give the comparison with the results files it was made from, or the comparison alone",
                )
    by_id = {r.run_id: r for r in runs}
    base, cand = by_id.get(ids[0] or ""), by_id.get(ids[1] or "")
    if base is None and cand is None and runs:
        base, cand = (runs[0], runs[1]) if len(runs) > 1 else (None, runs[0])
    return base, cand


@dataclass(frozen=True)
class ReportInputs:
    candidate: RunResult | None
    comparison: Comparison | None
    baseline: RunResult | None
    # where the report goes unless told: beside the comparison file, else beside the candidate's results file (the
    # second of two), where `perfci compare --out DIR` and `perfci run --baseline B --out DIR` put theirs; not beside
    # the baseline's, whose own report it replaced
    folder: Path = Path(".")


def check_outputs(inputs: list[Path], out: Path, markdown: Path | None) -> None:
    """UsageError when the report or the summary would be written over one of the files read (`perfci report
    cmp.json --out cmp.json` would replace the comparison with HTML)."""
    read = {p.resolve() for p in inputs}
    for flag, path in (("--out", out), ("--markdown", markdown)):
        if path is not None and str(path) != "-" and path.resolve() in read:
            raise UsageError(f"{flag} {path} is one of the files read; write the report elsewhere.")
        if path is not None and str(path) != "-" and path.is_dir():  # found after the HTML was written
            raise UsageError(f"{flag} {path} is a folder; give the name of the file to write.")


def load_inputs(paths: list[Path], threshold: float | None = None, settings: Settings | None = None) -> ReportInputs:
    """The candidate run, comparison and baseline run from 1-3 files. Two results files are compared here with the
    decision settings `perfci compare` uses: `threshold` (`--threshold`) > the environment > the configuration's
    `threshold` > its `thresholds` and each metric's own per device, and the configured `fail_on`; so both commands
    give the same verdicts for the same two files."""
    read = [_read(p) for p in paths]
    kinds = [k for k, _ in read]
    comparisons = [(p, doc) for p, (k, doc) in zip(paths, read, strict=True) if k == "comparison"]
    runs = [decode_results(data, str(p)) for p, (k, data) in zip(paths, read, strict=True) if k == "results"]
    if len(comparisons) > 1 or len(runs) > 2:
        raise UsageError(
            "give one results file, two (baseline then candidate), or one comparison file "
            "(optionally with the results files it compared)."
        )
    results = [p for p, k in zip(paths, kinds, strict=True) if k == "results"]
    if comparisons:
        comparison = decode_comparison(comparisons[0][1], str(comparisons[0][0]))
        base, cand = _sides(comparison, runs)
        return ReportInputs(cand, comparison, base, comparisons[0][0].parent)
    if len(runs) == 2:
        decision = decision_settings(settings or Settings(), DecisionOptions(threshold=threshold))
        labels = (str(results[0]), str(results[1]))
        comparison = compare_runs(runs[0], runs[1], decision, labels, scope=scope(False))
        return ReportInputs(runs[1], comparison, runs[0], results[1].parent)
    return ReportInputs(runs[0], None, None, results[0].parent)


def render(inputs: ReportInputs, out: Path, markdown: Path | None, decisions: DecisionView = BY_TIME) -> str | None:
    """Write report.html (and the Markdown summary to a file); return the Markdown text when it goes to stdout
    (`markdown` is '-')."""
    write_html(out, inputs.candidate, inputs.comparison, inputs.baseline, decisions)
    if markdown is None:
        return None
    text = render_markdown(inputs.candidate, inputs.comparison, inputs.baseline, report=out.name, decisions=decisions)
    if str(markdown) == "-":
        return text
    write_text_atomic(markdown, text)
    return None
