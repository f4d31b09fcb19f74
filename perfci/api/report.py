"""`perfci report` as a library call: which files were given (results or comparison, by their schema field),
and the run(s) and comparison to render from them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfci.api.compare import checked_fraction
from perfci.compare.decide import DecisionSettings, compare_runs
from perfci.compare.saved import SCHEMA_NAME as COMPARISON_SCHEMA
from perfci.compare.saved import parse_comparison
from perfci.errors import ResultsFormatError, UsageError
from perfci.model import Comparison, RunResult
from perfci.reports.html import write_html
from perfci.reports.markdown import render_markdown
from perfci.schema import SCHEMA_NAME as RESULTS_SCHEMA
from perfci.schema import fast_results, gc_paused, parse_json_bytes, parse_results


def file_kind(path: Path) -> str:
    """'results' or 'comparison', from the file's "schema" field (the loaders then validate it fully)."""
    return _read(path)[0]


def _read(path: Path) -> tuple[str, Any]:
    """The file's kind and its parsed document: each file is read and parsed once."""

    def text() -> str:
        try:
            return path.read_text("utf-8")
        except FileNotFoundError:
            raise ResultsFormatError(f"{path}: file not found.") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ResultsFormatError(f"{path}: not a readable JSON file ({exc}).") from None

    try:
        data: bytes | None = path.read_bytes()
    except OSError:
        data = None  # `text` words it
    run = fast_results(data, str(path)) if data is not None else None
    if run is not None:
        return "results", run  # read by the fast reader (docs/results-format.md); anything else below, as before
    with gc_paused():
        doc: Any = parse_json_bytes(data, text, str(path), "JSON")
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if schema == RESULTS_SCHEMA:
        return "results", doc
    if schema == COMPARISON_SCHEMA:
        return "comparison", doc
    raise ResultsFormatError(
        f"{path}: neither a perfci results file nor a comparison file (schema {schema!r}).",
        hint="pass a results.json or comparison.json written by perfci",
    )


def _sides(comparison: Comparison, runs: list[RunResult]) -> tuple[RunResult | None, RunResult | None]:
    """Match results files to the comparison's sides by run id; otherwise by order (baseline first)."""
    ids = [getattr(comparison, side, {}).get("run_id") for side in ("baseline_run", "candidate_run")]
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


def check_outputs(inputs: list[Path], out: Path, markdown: Path | None) -> None:
    """UsageError when the report or the summary would be written over one of the files read (fuzzing:
    `perfci report cmp.json --out cmp.json` replaced the comparison with HTML, and exited 0)."""
    read = {p.resolve() for p in inputs}
    for flag, path in (("--out", out), ("--markdown", markdown)):
        if path is not None and str(path) != "-" and path.resolve() in read:
            raise UsageError(f"{flag} {path} is one of the files read; write the report elsewhere.")


def load_inputs(paths: list[Path], threshold: float) -> ReportInputs:
    """The candidate run, comparison and baseline run from 1-3 files."""
    read = [_read(p) for p in paths]
    kinds = [k for k, _ in read]
    comparisons = [(p, doc) for p, (k, doc) in zip(paths, read, strict=True) if k == "comparison"]
    with gc_paused():
        runs = [
            doc if isinstance(doc, RunResult) else parse_results(doc, str(p), own=True)
            for p, (k, doc) in zip(paths, read, strict=True)
            if k == "results"
        ]
    if len(comparisons) > 1 or len(runs) > 2:
        raise UsageError(
            "give one results file, two (baseline then candidate), or one comparison file "
            "(optionally with the results files it compared)."
        )
    if comparisons:
        with gc_paused():
            comparison = parse_comparison(comparisons[0][1], str(comparisons[0][0]))
        base, cand = _sides(comparison, runs)
        return ReportInputs(cand, comparison, base)
    if len(runs) == 2:
        labels = (str(paths[kinds.index("results")]), str(paths[len(paths) - 1]))
        return ReportInputs(
            runs[1],
            compare_runs(
                runs[0], runs[1], DecisionSettings(threshold=checked_fraction("--threshold", threshold)), labels
            ),
            runs[0],
        )
    return ReportInputs(runs[0], None, None)


def render(inputs: ReportInputs, out: Path, markdown: Path | None) -> str | None:
    """Write report.html (and the Markdown summary to a file); return the Markdown text when it goes to stdout
    (`markdown` is '-')."""
    write_html(out, inputs.candidate, inputs.comparison, inputs.baseline)
    if markdown is None:
        return None
    text = render_markdown(inputs.candidate, inputs.comparison, inputs.baseline, report=out.name)
    if str(markdown) == "-":
        return text
    markdown.parent.mkdir(parents=True, exist_ok=True)
    markdown.write_text(text, "utf-8")
    return None
