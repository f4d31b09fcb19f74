"""Decision tables (reports/decisions.py) rendered: `markdown_lines` (summary.md), `text_lines` (the terminal,
within its width, configurations never cut) and `html_tables` (the report's template). Pure functions: no I/O."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, TypeVar

from perfci.metrics.rounds import shown_apart
from perfci.reports.decisions import Accuracy, Choice, DecisionTable
from perfci.reports.units import format_bytes, format_seconds

T = TypeVar("T")
MAX_TEXT_TABLES = 6  # at most this many tables in a terminal; summary.md and the report show them all


def _rate(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def _accuracy_cell(a: Accuracy | None, config: str = "") -> str:
    """The relative L2 error with its bound; a row with no accuracy in a table that has some is the reference, and
    so is the reference configuration checked against a second run of itself (eager, against "eager fp32": it read
    "0 (≤ 1.3e-05)", as if it were a variant that happened to be exact)."""
    if a is None or (config and a.reference.split(" ", 1)[0] == config and not a.rel_l2):
        return "reference"
    if a.rel_l2 is None:
        return f"- (≤ {a.limit:.2g})" if a.limit is not None else "-"
    if a.limit is None:
        return f"{a.rel_l2:.2g}"
    # digits enough to show an error past its bound as past it: "0.1 (≤ 0.1): over tolerance" read as within
    return f"{shown_apart(a.rel_l2, a.limit)} (≤ {a.limit:.2g})"


def _ranked_by(table: DecisionTable) -> str:
    if table.rank == "memory":
        return "own peak memory"
    return "time per item" if table.batch_param else "time per call"


def _best_sentence(table: DecisionTable, b: Choice, where: str) -> str:
    batch = f", batch {b.batch}" if b.batch is not None else ""
    item = "item" if table.batch_param else "call"
    cost = (
        f"{format_seconds(b.per_item)} per {item}, {_rate(b.items_per_s)} {item}s/s"
        if table.rank == "time"
        else f"{format_bytes(table.memory_of(b))} own peak memory (beyond the process's own), "
        f"{format_seconds(b.per_item)} per {item}"
    )
    within = " within its accuracy tolerance" if b.accuracy is not None and b.accuracy.limit is not None else ""
    ties = table.ties_of(b)
    if ties:
        # each configuration's batch and cost in its own brackets, so a tie of three cannot be read as some other
        # grouping ("inference, batch 8 (...) and eager, batch 8, channels-last, batch 8" was one such list)
        first = f"{b.config} ({f'batch {b.batch}, ' if b.batch is not None else ''}{cost})"
        named = [first, *(f"{t.config}{f' (batch {t.batch})' if t.batch is not None else ''}" for t in ties[:4])]
        more = [f"{len(ties) - 4} more"] if len(ties) > 4 else []
        return (
            f"best configuration{where} by {_ranked_by(table)}{within}: a tie between "
            f"{_listed([*named, *more], [b, *ties])}: their intervals overlap, so this run cannot tell them apart"
        )
    return f"best configuration{where} by {_ranked_by(table)}{within}: {b.config}{batch} ({cost})"


def _listed(items: list[str], rows: list[Choice]) -> str:
    """`a, b and c`; `a; b and c` where a configuration has a comma of its own (`hidden=512,dtype=bf16`)."""
    sep = "; " if any("," in r.config for r in rows) else ", "
    return f"{sep.join(items[:-1])} and {items[-1]}"


def best_lines(table: DecisionTable) -> list[str]:
    """The sentences naming the best configuration and why (one per size where the sweep has sizes), or why there
    is none."""
    none = _why_none(table, table.rows)
    if table.size_of is None:
        return [_best_sentence(table, table.best[0], "")] if table.best else [f"best configuration: {none}"]
    groups: dict[str, list[Choice]] = {}
    for r in table.rows:
        groups.setdefault(table.size_of[r.case_id], []).append(r)
    if all(len(g) == 1 for g in groups.values()):
        return [f"no best configuration: the rows differ only in {', '.join(table.sizes)}, sizes of the work, which "
                "are not a choice to rank"]  # fmt: skip
    best = {table.size_of[b.case_id]: b for b in table.best}
    return [
        _best_sentence(table, best[size], f" at {size}")
        if size in best
        else f"best configuration at {size}: {_why_none(table, group)}"
        for size, group in groups.items()
        if len(group) > 1  # a size measured in one configuration only has nothing to choose between
    ]


def _why_none(table: DecisionTable, rows: Iterable[Choice]) -> str:
    """Why no row is the best: what kept each out (every row failed to run: not an accuracy question)."""
    rows = list(rows)
    failures = [r.failed for r in rows if r.failed is not None]
    if rows and len(failures) == len(rows) and not {"over tolerance", "check failed"} & set(failures):
        return f"none (no configuration measured: {', '.join(dict.fromkeys(failures))})"
    limit = " and the memory limit" if table.over_memory else ""
    return f"none (no configuration measured within its tolerance{limit})"


def _columns(table: DecisionTable) -> list[str]:
    cols = ["configuration"]
    cols += ["batch"] if table.batch_param else []
    cols += ["per call", "per item", "items/s"] if table.batch_param else ["per call", "calls/s"]
    cols += ["host memory"] if any(r.host_bytes is not None for r in table.rows) else []
    cols += ["device memory"] if any(r.device_bytes is not None for r in table.rows) else []
    cols += ["accuracy (rel. L2)"] if any(r.accuracy is not None for r in table.rows) else []
    return cols


def _cells(table: DecisionTable, r: Choice, cols: list[str]) -> list[str]:
    values = {
        "configuration": r.config + (" *" if table.starred(r) else ""),
        "batch": str(r.batch) if r.batch is not None else "-",
        "per call": format_seconds(r.per_call),
        "per item": format_seconds(r.per_item),
        "items/s": _rate(r.items_per_s),
        "calls/s": _rate(r.items_per_s),
        "host memory": format_bytes(r.host_bytes),
        "device memory": format_bytes(r.device_bytes),
        "accuracy (rel. L2)": _accuracy_cell(r.accuracy, r.config),
    }
    cells = [values[c] for c in cols]
    if r.failed is not None and "accuracy (rel. L2)" in cols:
        # a case whose set-up failed recorded no accuracy: it is not the reference, whatever its cell would say
        cells[-1] = f"{cells[-1]}: {r.failed}" if r.accuracy is not None else f"- ({r.failed})"
    return cells


def _status_words(table: DecisionTable) -> list[str]:
    words = []
    failed = [f"{r.config}{f' batch {r.batch}' if r.batch is not None else ''} ({r.failed})" for r in table.rows
              if r.failed is not None]  # fmt: skip
    if failed:
        words.append("not eligible: " + "; ".join(failed))
    if table.over_memory:
        words.append(f"left out above the memory limit: {len(table.over_memory)} configuration(s)")
    return words


def markdown_lines(tables: Iterable[DecisionTable], code: Any) -> list[str]:
    """summary.md's section: one table per sweep, the best configuration, and the notes. `code` quotes text."""
    lines: list[str] = []
    for t in tables:
        cols = _columns(t)
        reference = next((r.accuracy.reference for r in t.rows if r.accuracy is not None), None)
        against = f"; accuracy against {reference}" if reference else ""
        lines += ["", f"#### Decision table: {code(t.key)} (ranked by {_ranked_by(t)}{against})", ""]
        lines.append("| " + " | ".join(cols) + " |")
        lines.append("| " + " | ".join("---" if i == 0 else "--:" for i in range(len(cols))) + " |")
        for r in t.rows:
            cells = _cells(t, r, cols)
            lines.append("| " + " | ".join([code(cells[0]), *cells[1:]]) + " |")
        lines.append("")
        lines += [f"**{line}**" for line in best_lines(t)]
        lines += [f"\n> {w}" for w in _status_words(t)]
        lines += [f"\n> note: {code(n, 300)}" for n in t.notes]
    return lines


def _fit(cells: list[str], widths: list[int]) -> str:
    return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))


SHORT = {"configuration": "config", "host memory": "host mem", "device memory": "dev mem",
         "accuracy (rel. L2)": "rel. L2 (tol)"}  # fmt: skip
DROP_FIRST = ("calls/s", "items/s", "per call", "host memory")  # what a narrow terminal leaves out, in order
FIRST_COLUMN = 32  # the configuration column's width before a longer one is printed on a line of its own


def _without(seq: list[T], i: int) -> list[T]:
    return seq[:i] + seq[i + 1 :]


def text_lines(tables: list[DecisionTable], width: int = 80) -> list[str]:
    """The terminal's section, every line within `width` columns: short headers, the least needed columns left
    out where they do not fit (said below the table), and a configuration too long for its column printed on a
    line of its own above its row, never cut."""
    lines: list[str] = []
    for t in tables[:MAX_TEXT_TABLES]:
        cols = _columns(t)
        rows = [_cells(t, r, cols) for r in t.rows]
        heads = [SHORT.get(c, c) for c in cols]
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
        dropped = []
        # a configuration longer than FIRST_COLUMN goes on a line of its own: it does not push figures out
        first_needs = max(len(heads[0]), min(widths[0], FIRST_COLUMN))
        for name in DROP_FIRST:
            if 2 + first_needs + sum(widths[1:]) + 2 * (len(cols) - 1) <= width or name not in cols or len(cols) <= 3:
                continue
            i = cols.index(name)
            dropped.append(name)
            cols, heads, widths = _without(cols, i), _without(heads, i), _without(widths, i)
            rows = [_without(r, i) for r in rows]
        first = max(len(heads[0]), min(widths[0], width - 2 - sum(widths[1:]) - 2 * (len(cols) - 1)))
        widths[0] = first
        lines += ["", f"decision table: {t.key} (ranked by {_ranked_by(t)})"]
        lines.append("  " + _fit(heads, widths))
        for cells in rows:
            if len(cells[0]) > first:
                lines.append("  " + cells[0])
                cells = ["", *cells[1:]]
            lines.append("  " + _fit(cells, widths))
        lines += [w for line in best_lines(t) for w in _wrap(line, width)]
        said = [f"not shown at this width: {', '.join(dropped)} (see summary.md)"] if dropped else []
        for w in said + _status_words(t) + [f"note: {n}" for n in t.notes]:
            lines += _wrap(w, width)
    if len(tables) > MAX_TEXT_TABLES:
        lines.append(f"… and {len(tables) - MAX_TEXT_TABLES} more decision table(s) in summary.md and report.html")
    return lines


def _wrap(text: str, width: int) -> list[str]:
    """Words onto lines of at most `width` columns (a word longer than a line stays whole on its own)."""
    out: list[str] = []
    line = ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            out.append(line)
            line = "  " + word
        else:
            line = f"{line} {word}" if line else word
    return [*out, line] if line else out


def html_tables(tables: Iterable[DecisionTable]) -> list[dict[str, Any]]:
    """Plain data for the report's template (autoescaped there)."""
    return [
        {
            "key": t.key,
            "ranked_by": _ranked_by(t),
            "columns": (cols := _columns(t)),
            "rows": [
                {
                    "cells": _cells(t, r, cols),
                    "best": t.starred(r),
                    "failed": r.failed,
                }
                for r in t.rows
            ],
            "best": best_lines(t),
            "status": _status_words(t),
            "notes": list(t.notes),
        }
        for t in tables
    ]
