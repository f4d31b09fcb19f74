"""Declared expected changes: a versioned file in the repository that lets a pull request that knowingly trades
speed (or memory) for something else pass the gate, with a note.

`perfci-expected.toml` at the project root (or `--expected PATH`):

    version = 1

    [[change]]
    case = "default.matmul*"         # case pattern (perfci.patterns: substring, glob or re:)
    metric = "latency"               # metric name or family (default "latency")
    max_change = 0.10                # the largest worsening accepted: 0.10 or "10%" (10% slower)
    reason = "exact softmax instead of the approximation (#123)"

`metric` must be a compared metric's name (`latency.p99`) or the first dotted part of one (`latency`): a typo is
refused with the nearest name, not left to match nothing. `max_change` is a number above 0 (2.0 = 3x slower) or a
percentage string ("150%"), up to MAX_CHANGE. `load_expected` checks all of it, so a caller may load the file
before it measures anything and refuse a malformed one at once.

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

import difflib
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from perfci.errors import ConfigError
from perfci.format.model import BELOW_THRESHOLD_WORSE, Comparison, Direction, MetricComparison, Verdict
from perfci.fractions import parse_percent
from perfci.metrics.registry import MetricRegistry, default_registry
from perfci.patterns import case_pattern

EXPECTED_FILE = "perfci-expected.toml"
_WORSE = (Verdict.REGRESSION, *BELOW_THRESHOLD_WORSE)  # what can fail the gate (slower, grew: with fail_on)
# a covered row settled as no worse: only then is an entry's change "already in the baseline" (an inconclusive
# +63% may be the change still coming, an error or missing row says nothing)
_SETTLED_NOT_WORSE = (Verdict.UNCHANGED, Verdict.IMPROVEMENT, Verdict.FASTER, Verdict.SHRANK)

MAX_CHANGE = 1000.0  # the largest max_change read (a 100,000% worsening): anything beyond is a typo, or inf
VERSION = 1
_KEYS = ("case", "metric", "max_change", "reason", "removed")
_CHANGE_HEADER = re.compile(r"""^[ \t]*\[\[[ \t]*(?:change|"change"|'change')[ \t]*\]\]""", re.MULTILINE)
_ANY_HEADER = re.compile(r"^[ \t]*\[", re.MULTILINE)


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
        family = row.metric.split(".", 1)[0]  # what `metric_names` offers: keep the two in step
        return not self.removed and self.metric in (row.metric, family) and case_pattern(self.case).matches(row.case_id)


def metric_names(registry: MetricRegistry | None = None) -> frozenset[str]:
    """What an entry's `metric` may name: what `ExpectedChange.covers` can match, i.e. a comparable metric's name
    (only those get rows) or its first dotted part (`latency` for `latency.p99`)."""
    names = [name for name, d in (registry or default_registry()).items() if d.comparable]
    return frozenset(names) | {name.split(".", 1)[0] for name in names}


def _metric(metric: str, where: str, known: frozenset[str], registry: MetricRegistry) -> str:
    if metric in known:
        return metric
    close = difflib.get_close_matches(metric, sorted(known), n=1)
    listed = f"metric names and families: {', '.join(sorted(known))}"
    problem = "is never compared" if metric in registry else "is unknown"
    raise ConfigError(
        f"{where}: metric {metric!r} {problem}: the entry would match no row.",
        f"did you mean {close[0]!r}? ({listed})" if close else f"use one of the {listed}",
    )


def _max_change(value: object, where: str) -> float:
    """A number as written (0.10 = 10% worse; above 1 allowed: 2.0 = 3x slower) or a percentage string ("150%"),
    above 0 and up to MAX_CHANGE."""
    number: object = value
    if isinstance(value, str):
        try:
            number = parse_percent(value)
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, int | float) or not 0 < number <= MAX_CHANGE:
        raise ConfigError(
            f"{where}: 'max_change' must be above 0 and at most {MAX_CHANGE:g} ({MAX_CHANGE * 100:,.0f}%), as a number "
            f'or a percentage string (0.10 or "10%" for 10% worse); found {value!r}.'
        )
    return float(number)


def _lines(text: str, count: int) -> list[tuple[int, int]]:
    """Best effort, for messages: where each of the `count` [[change]] tables starts and ends in `text` (character
    offsets); none when the headers found are not `count` (an inline array, a header inside a string)."""
    starts = [m.start() for m in _CHANGE_HEADER.finditer(text)]
    if len(starts) != count:
        return []
    spans = []
    for start in starts:
        line_end = text.find("\n", start)
        after = _ANY_HEADER.search(text, line_end + 1) if line_end >= 0 else None
        spans.append((start, after.start() if after else len(text)))
    return spans


def _where(text: str, source: str, span: tuple[int, int] | None, number: int, key: str | None) -> str:
    """`file:line: change #N`: the line of `key` in the entry's table, else of its header (file alone when the
    table is not found)."""
    if span is None:
        return f"{source}: change #{number}"
    start, end = span
    if key is not None:
        esc = re.escape(key)
        found = re.compile(rf"""^[ \t]*(?:{esc}|"{esc}"|'{esc}')[ \t]*=""", re.MULTILINE).search(text, start, end)
        start = found.start() if found else start
    return f"{source}:{text.count(chr(10), 0, start) + 1}: change #{number}"


def _entry(
    raw: object, at: Callable[[str | None], str], known: frozenset[str], registry: MetricRegistry
) -> ExpectedChange:
    where = at(None)
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: each [[change]] must be a table.")
    unknown = set(raw) - set(_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(map(repr, sorted(unknown)))}.")
    case, reason = raw.get("case"), raw.get("reason")
    metric, max_change = raw.get("metric", "latency"), raw.get("max_change")
    if not isinstance(case, str) or not isinstance(metric, str):
        raise ConfigError(
            f"{at('case' if not isinstance(case, str) else 'metric')}: 'case' and 'metric' must be strings."
        )
    if not isinstance(reason, str) or not reason.strip():
        raise ConfigError(f"{at('reason')}: 'reason' is required: say why the change is expected.")
    removed = raw.get("removed", False)
    if not isinstance(removed, bool):
        raise ConfigError(f"{at('removed')}: 'removed' must be true or false.")
    if removed:
        if "max_change" in raw or "metric" in raw:
            raise ConfigError(f"{where}: a removal ('removed = true') takes no 'max_change' or 'metric'.")
        max_change = MAX_CHANGE
    else:
        metric = _metric(metric, at("metric"), known, registry)
    value = _max_change(max_change, at("max_change"))
    try:
        case_pattern(case)
    except ValueError as exc:
        raise ConfigError(f"{at('case')}: bad case pattern {case!r}: {exc}.") from None
    return ExpectedChange(case, metric, value, reason.strip(), removed)


def parse_expected(text: str, source: str, *, registry: MetricRegistry | None = None) -> tuple[ExpectedChange, ...]:
    """Every entry of an expected-changes file, checked in full (TOML, version, keys, types, case patterns, metric
    names against `registry` (the default registry unless given), `max_change`); ConfigError (exit 2) naming the
    file, and the line and entry where they are found, otherwise."""
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
    registry = registry or default_registry()
    known = metric_names(registry)
    spans = _lines(text, len(changes))

    def at(i: int) -> Callable[[str | None], str]:
        return lambda key: _where(text, source, spans[i] if spans else None, i + 1, key)

    return tuple(_entry(raw, at(i), known, registry) for i, raw in enumerate(changes))


def load_expected(
    path: Path, required: bool = False, *, registry: MetricRegistry | None = None
) -> tuple[ExpectedChange, ...]:
    """The expected-changes file at `path`, checked in full (`parse_expected`): callable before anything is measured,
    so that a malformed file is refused up front. A missing file is no entries, or a ConfigError when `required`
    (a path given by `--expected`)."""
    if not path.exists():
        if required:
            raise ConfigError(f"{path}: expected-changes file not found.")
        return ()
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:  # bytes that are not UTF-8
        raise ConfigError(f"{path}: cannot read the expected-changes file ({exc}).") from None
    return parse_expected(text, str(path), registry=registry)


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
        elif not c.removed and all(row.verdict in _SETTLED_NOT_WORSE for row in rows if c.covers(row)):
            said.append(
                f"{name} covers no worsening here: once its change is in the baseline, remove it, or it lets a "
                f"later worsening of up to {c.max_change:.0%} pass"
            )
    return said
