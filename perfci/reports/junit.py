"""JUnit XML from a comparison: each case is a test case; a regression is a failure.

Mapping (one `<testcase classname="perfci.<suite or 'cases'>" name="<case id>">` per case):
- any regression not covered by a declared expected change -> `<failure type="regression">`; with
  fail_on = "slower" (the comparison's settings), a `slower` or `grew` row likewise -> `<failure type="slower">`
  (or "grew");
- an `error` verdict -> `<error type="error">`;
- `inconclusive` (and nothing worse) -> `<skipped>` with the reason, so CI shows it without failing;
- `missing` (a baseline case the candidate lacks) -> `<failure type="missing">`, as it fails the gate; one that
  is allowed (`--allow-missing`, a declared removal, a skipped test) -> `<skipped>` with the reason;
- everything else passes (`slower`/`faster`, `grew`/`shrank` below the threshold, `unchanged`, `improvement`,
  `new`). Every row of the case is listed in `<system-out>`, with its verdict and its minimum detectable change
  ("detects").
The document follows the common Jenkins/Ant JUnit schema that CI systems and pytest's parser read.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path

from perfci.format.jsonfile import write_text_atomic
from perfci.format.model import Comparison, MetricComparison, Verdict, printable
from perfci.reports.units import byte_change_interval, format_threshold


def _pct(ratio: float | None) -> str:
    return "-" if ratio is None else f"{(ratio - 1.0) * 100:+.2f}%"


def _interval(r: MetricComparison) -> str:
    if r.ratio_low is None or r.ratio_high is None:
        return ""
    in_bytes = byte_change_interval(r.ratio_low, r.ratio_high, r.baseline, r.unit)
    return f" [{in_bytes if in_bytes is not None else f'{_pct(r.ratio_low)} .. {_pct(r.ratio_high)}'}]"


def _line(r: MetricComparison) -> str:
    interval = _interval(r)
    threshold = f", threshold {format_threshold(r.metric, r.threshold, r.unit)}" if r.threshold is not None else ""
    extra = f" ({r.note})" if r.note else ""
    expected = f" [expected: {r.expected}]" if r.expected else ""
    detects = f", detects {r.mdc * 100:.2g}%" if r.mdc is not None else ""
    return f"{r.metric}: {r.verdict.value} {_pct(r.ratio)}{interval}{threshold}{detects}{extra}{expected}"


def _testcase(suite: ET.Element, case_id: str, rows: list[MetricComparison], gate: set[int]) -> str:
    """The case's `<testcase>`; `gate` holds the ids of the comparison's rows that fail the gate."""
    tc = ET.SubElement(suite, "testcase", classname="perfci.cases", name=case_id, time="0")
    failing = [r for r in rows if id(r) in gate]
    errors = [r for r in rows if r.verdict is Verdict.ERROR]
    skipped = [r for r in rows if r.verdict in (Verdict.INCONCLUSIVE, Verdict.MISSING) and id(r) not in gate]
    outcome = "passed"
    if failing:
        kind = "regression" if any(r.verdict is Verdict.REGRESSION for r in failing) else failing[0].verdict.value
        el = ET.SubElement(tc, "failure", type=kind, message=_xml("; ".join(_line(r) for r in failing)))
        el.text = _xml("\n".join(_line(r) for r in failing))
        outcome = "failure"
    elif errors:
        el = ET.SubElement(tc, "error", type="error", message=_xml(errors[0].note or "the case failed"))
        el.text = _xml("\n".join(r.note for r in errors))
        outcome = "error"
    elif skipped:
        ET.SubElement(tc, "skipped", message=_xml("; ".join(_line(r) for r in skipped)))
        outcome = "skipped"
    ET.SubElement(tc, "system-out").text = _xml("\n".join(_line(r) for r in rows))
    return outcome


def _by_case(rows: Iterable[MetricComparison]) -> dict[str, list[MetricComparison]]:
    out: dict[str, list[MetricComparison]] = {}
    for r in rows:
        out.setdefault(r.case_id, []).append(r)
    return out


def render_junit(comparison: Comparison, suite_name: str = "perfci") -> str:
    root = ET.Element("testsuites", name=suite_name)
    suite = ET.SubElement(root, "testsuite", name=suite_name)
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="baseline", value=comparison.baseline_label)
    ET.SubElement(props, "property", name="candidate", value=comparison.candidate_label)
    ET.SubElement(props, "property", name="mode", value=comparison.mode)
    for w in comparison.warnings:
        ET.SubElement(props, "property", name="warning", value=w)
    counts = {"tests": 0, "failure": 0, "error": 0, "skipped": 0, "passed": 0}
    gate = {id(r) for r in comparison.failing}  # what fails the gate fails its test case: the exit code's rows
    for case_id, rows in _by_case(comparison.rows).items():
        counts[_testcase(suite, case_id, rows, gate)] += 1
        counts["tests"] += 1
    for el in (root, suite):
        el.set("tests", str(counts["tests"]))
        el.set("failures", str(counts["failure"]))
        el.set("errors", str(counts["error"]))
        el.set("skipped", str(counts["skipped"]))
    suite.set("time", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: Path, comparison: Comparison) -> None:
    write_text_atomic(path, render_junit(comparison))


def _xml(text: str) -> str:
    """Text XML 1.0 can hold: control characters other than newline and tab written as escapes (an error message
    holding ESC made junit.xml not well-formed, and a CI's test report then read nothing)."""
    return printable(text, lines=True)
