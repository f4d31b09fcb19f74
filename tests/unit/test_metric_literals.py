"""A metric's name is spelled only in its definition (perfci/metrics/definitions.py); code elsewhere uses the
definitions' constants. Tests, documentation and templates may spell names; docstrings are documentation. The
accuracy metrics (`accuracy.*`) are held to it too: the check covers every name the default registry knows.

A few strings equal a metric's name without being one, like the results format's `flops` field (work per call)
or a workload tag; they are listed in NOT_METRIC_NAMES, each with how often it may appear and why."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from perfci.metrics.registry import ACCURACY, default_registry

PACKAGE = Path(__file__).parents[2] / "perfci"
DEFINITIONS = PACKAGE / "metrics" / "definitions.py"
METRICS = frozenset(default_registry())

# (file under perfci/, string) -> (the most times it may appear there, why it is not a metric name)
# fmt: off
NOT_METRIC_NAMES: dict[tuple[str, str], tuple[int, str]] = {
    ("format/schema.py", "flops"): (2, "the results format's field: a case's work per call (CaseResult.flops)"),
    ("profilers/work.py", "flops"): (2, "key of the work sources (declared|derived|unknown of CaseResult.flops)"),
    ("profilers/peaks.py", "flops"): (1, "key of the measured peaks in the fingerprint"),
    ("metrics/derive.py", "flops"): (3, "key of the measured peaks in the fingerprint (twice), of the work sources"),
    ("reports/charts.py", "flops"): (2, "key of the measured peaks; the roofline chart's JSON field"),
    ("reports/case_rows.py", "flops"): (3, "a report row's template field; key of the measured peaks (twice)"),
    ("reports/case_rows.py", "bandwidth"): (1, "a report row's template field"),
    ("reports/markdown.py", "bandwidth"): (1, "the word that leads an implausible bandwidth's line"),
    ("reports/terminal.py", "bandwidth"): (2, "a column title, and its place in the narrow layout's drop order"),
    ("workloads/builtin/kernels.py", "bandwidth"): (2, "a workload tag"),
}
# fmt: on


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def metric_literals(path: Path) -> list[tuple[int, str]]:
    """(line, name) of each string constant in `path` that equals a metric's name, docstrings left out."""
    tree = ast.parse(path.read_text("utf-8"))
    docs = _docstrings(tree)
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in METRICS
        if id(node) not in docs
    )


def test_metric_names_are_spelled_only_in_the_definitions() -> None:
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == DEFINITIONS:
            continue
        rel = path.relative_to(PACKAGE).as_posix()
        hits = metric_literals(path)
        counts = Counter(name for _, name in hits)
        for line, name in hits:
            allowed, _ = NOT_METRIC_NAMES.get((rel, name), (0, ""))
            if counts[name] > allowed:
                problems.append(f"perfci/{rel}:{line}: {name!r}")
    assert not problems, "metric names spelled outside perfci/metrics/definitions.py (use its constants):\n" + (
        "\n".join(problems)
    )


def test_the_check_finds_literals_and_skips_docstrings(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        '"""Module on latency.median."""\n'
        "def f(c):\n"
        '    """Reads "latency.median"."""\n'
        '    return c.metric("latency.median"), "latency", f"{c}.pct_peak", f"{c}memory.peak_rss"\n'
    )
    assert metric_literals(src) == [(4, "latency.median"), (4, "memory.peak_rss")]


def test_every_exception_names_a_metric() -> None:
    assert all(name in METRICS for _, name in NOT_METRIC_NAMES)


def test_the_accuracy_metrics_are_checked() -> None:
    assert ACCURACY and all(name.startswith("accuracy.") and name in METRICS for name in ACCURACY)
