"""Declared expected changes: a versioned file in the repository that lets a pull request that knowingly trades
speed (or memory) for something else pass the gate, with a note.

`perfci-expected.toml` at the project root (or `--expected PATH`):

    version = 1

    [[change]]
    case = "default.matmul*"         # case pattern (perfci.patterns: substring, glob or re:)
    metric = "latency"               # metric name or family (default "latency")
    max_change = 0.10                # the largest worsening accepted, as a fraction (0.10 = 10% slower)
    reason = "exact softmax instead of the approximation (#123)"

A `regression` (or `slower`) row that matches an entry and whose estimated change is within `max_change` keeps its
verdict but gets `expected = reason`, and the gate passes it. A regression beyond `max_change` still fails, with a note.
Remove the entry once the new numbers are the baseline.

A case removed on purpose (it is in the baseline, not in the candidate: `missing`, which fails the gate) is
declared with `removed = true` instead of `max_change`:

    [[change]]
    case = "default.old_kernel*"
    removed = true
    reason = "the old kernel is gone (#124)"
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from perfci.errors import ConfigError
from perfci.format.model import BELOW_THRESHOLD_WORSE, Comparison, Direction, MetricComparison, Verdict
from perfci.patterns import case_pattern

EXPECTED_FILE = "perfci-expected.toml"
_WORSE = (Verdict.REGRESSION, *BELOW_THRESHOLD_WORSE)  # what can fail the gate (slower, grew: with fail_on)

MAX_CHANGE = 1000.0  # the largest max_change read (a 100,000% worsening): anything beyond is a typo, or inf
VERSION = 1


@dataclass(frozen=True)
class ExpectedChange:
    case: str
    metric: str
    max_change: float
    reason: str
    removed: bool = False  # declares the removal of the matching cases (their `missing` rows pass)

    def covers(self, row: MetricComparison) -> bool:
        if row.verdict is Verdict.MISSING:
            return self.removed and case_pattern(self.case).matches(row.case_id)
        family = row.metric.split(".", 1)[0]
        return not self.removed and self.metric in (row.metric, family) and case_pattern(self.case).matches(row.case_id)


def _entry(raw: object, where: str) -> ExpectedChange:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: each [[change]] must be a table.")
    unknown = set(raw) - {"case", "metric", "max_change", "reason", "removed"}
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(map(repr, sorted(unknown)))}.")
    case, reason = raw.get("case"), raw.get("reason")
    metric, max_change = raw.get("metric", "latency"), raw.get("max_change")
    if not isinstance(case, str) or not isinstance(metric, str):
        raise ConfigError(f"{where}: 'case' and 'metric' must be strings.")
    if not isinstance(reason, str) or not reason.strip():
        raise ConfigError(f"{where}: 'reason' is required: say why the change is expected.")
    removed = raw.get("removed", False)
    if not isinstance(removed, bool):
        raise ConfigError(f"{where}: 'removed' must be true or false.")
    if removed:
        if "max_change" in raw or "metric" in raw:
            raise ConfigError(f"{where}: a removal ('removed = true') takes no 'max_change' or 'metric'.")
        max_change = MAX_CHANGE
    if isinstance(max_change, bool) or not isinstance(max_change, int | float) or not 0 < max_change <= MAX_CHANGE:
        raise ConfigError(f"{where}: 'max_change' must be a positive fraction (0.10 = 10%).")
    try:
        case_pattern(case)
    except ValueError as exc:
        raise ConfigError(f"{where}: bad case pattern {case!r}: {exc}.") from None
    return ExpectedChange(case, metric, float(max_change), reason.strip(), removed)


def parse_expected(text: str, source: str) -> tuple[ExpectedChange, ...]:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML ({exc}).") from None
    except RecursionError:  # arrays nested 5,000 deep
        raise ConfigError(f"{source}: not valid TOML (nested too deeply).") from None
    if doc.get("version") != VERSION or type(doc.get("version")) is not int:  # `true` and `1.0` equal 1
        raise ConfigError(f"{source}: 'version = {VERSION}' is required (found {doc.get('version')!r}).")
    unknown = set(doc) - {"version", "change"}
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {', '.join(map(repr, sorted(unknown)))}.")
    changes = doc.get("change", [])
    if not isinstance(changes, list):
        raise ConfigError(f"{source}: 'change' must be an array of tables ([[change]]).")
    return tuple(_entry(raw, f"{source}: change #{i + 1}") for i, raw in enumerate(changes))


def load_expected(path: Path, required: bool = False) -> tuple[ExpectedChange, ...]:
    if not path.exists():
        if required:
            raise ConfigError(f"{path}: expected-changes file not found.")
        return ()
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:  # bytes that are not UTF-8
        raise ConfigError(f"{path}: cannot read the expected-changes file ({exc}).") from None
    return parse_expected(text, str(path))


def _worsening(row: MetricComparison) -> float | None:
    if row.ratio is None:
        return None
    return row.ratio - 1.0 if row.direction is Direction.LOWER else 1.0 / row.ratio - 1.0


def apply_expected(comparison: Comparison, changes: tuple[ExpectedChange, ...]) -> Comparison:
    """Mark regressions and slower rows covered by a declared expected change, and missing rows covered by a
    declared removal (see the module docstring)."""
    if not changes:
        return comparison
    rows = []
    for row in comparison.rows:
        if row.verdict is Verdict.MISSING:
            removal = next((c for c in changes if c.covers(row)), None)
            rows.append(replace(row, expected=removal.reason) if removal is not None and not row.expected else row)
            continue
        entry = next((c for c in changes if c.covers(row)), None) if row.verdict in _WORSE else None
        worse = _worsening(row) if entry else None
        if entry is not None and worse is not None and worse <= entry.max_change:
            row = replace(row, expected=entry.reason)
        elif entry is not None:
            note = f"beyond the declared expected change of {entry.max_change:.0%} ({entry.reason})"
            row = replace(row, note=f"{row.note}; {note}" if row.note else note)
        rows.append(row)
    return replace(comparison, rows=tuple(rows), warnings=(*comparison.warnings, *_stale(comparison.rows, changes)))


def _stale(rows: tuple[MetricComparison, ...], changes: tuple[ExpectedChange, ...]) -> list[str]:
    """Warnings for entries that did nothing here: one that matches no case (a typo, or cases not selected), and
    one whose cases got no worse (its change is already in the baseline: left in place, it would let a later
    worsening of up to its `max_change` pass)."""
    said = []
    ids = {row.case_id for row in rows}
    for i, c in enumerate(changes):
        name, pattern = f"expected change #{i + 1} (case {c.case!r}: {c.reason})", case_pattern(c.case)
        if not any(pattern.matches(cid) for cid in ids):
            said.append(f"{name} matches no case compared here: a typo, or its cases were not selected")
        elif not c.removed and not any(row.verdict in _WORSE and c.covers(row) for row in rows):
            said.append(
                f"{name} covers no worsening here: once its change is in the baseline, remove it, or it lets a "
                f"later worsening of up to {c.max_change:.0%} pass"
            )
    return said
