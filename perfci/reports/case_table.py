"""A table of one row per case id that keeps what matters whole at any width.

The id and the verdict word are what a reader (or a grep of a CI log) looks for, so neither is ever cut or
broken mid-word. A column empty in every row (bandwidth for pure-Python tests) is left out. When the table fits
the width it is drawn as a rich table; when it does not (an 80-column terminal), it is drawn compact: each case
id on its own line, its rows below it with the columns that fit (the verdict always; the others dropped in the
order the caller gives, and named under the table), and a row's note (an error message, an expected change) on
its own line below the row, wrapped at spaces.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

EMPTY_CELLS = frozenset({"", "-"})
INDENT = 2  # the compact layout's rows, under their id
GAP = 2  # between the compact layout's columns
NOTE_INDENT = 4
# where a case id longer than the width may be broken: after a path separator or `::`, before its parameters or
# its device; else after a word separator; only else (a single word longer than the terminal) anywhere
_BREAK_AFTER = ("/", "::", ",")
_BREAK_BEFORE = ("[", "@")
_SOFT_BREAK_AFTER = ("_", ".", "-", "=")
MEASURE_WIDTH = 1_000_000  # "as wide as it likes" when measuring a table's natural width
# a longer note goes under the wide layout's table, numbered, and its row holds the number: inline, one 170-character
# note (an implausible bandwidth's reason) padded every row of a CI log's table to its width
NOTE_INLINE_MAX = 100
# output that is not a terminal (a CI log, a pipe): tables as wide as they need, so a case id stays on one line and a
# grep of the log finds it with its verdict; a terminal gets the compact layout when narrow
LOG_WIDTH = 10_000


@dataclass(frozen=True)
class Column:
    header: str
    justify: str = "left"  # "left" or "right"


@dataclass(frozen=True)
class CaseRow:
    case_id: str
    cells: tuple[Text, ...]  # one per column; the last column holds the verdict word
    note: Text | None = None  # after the verdict in the wide layout, on a line of its own in the compact one


@dataclass(frozen=True)
class CaseTable:
    """The rows, their columns, and the order in which the compact layout drops columns (`drop_order`: headers;
    a column not named there is never dropped)."""

    columns: tuple[Column, ...]
    rows: tuple[CaseRow, ...]
    title: str | None = None
    caption: Text | None = None
    id_header: str = "case"
    drop_order: tuple[str, ...] = ()
    note_around: tuple[str, str] = (" (", ")")  # how the wide layout joins a note to the verdict
    note_header: str | None = None  # a column of its own after the verdict in the wide layout, named so

    def shown(self) -> list[int]:
        """The columns with something in at least one row (the verdict column always)."""
        last = len(self.columns) - 1
        return [
            j
            for j in range(len(self.columns))
            if j == last or any(r.cells[j].plain.strip() not in EMPTY_CELLS for r in self.rows)
        ]

    def footnoted(self) -> dict[int, int]:
        """The rows whose note goes under the wide layout's table (longer than NOTE_INLINE_MAX; not with a note
        column): row index -> footnote number."""
        if self.note_header is not None:
            return {}
        long = [i for i, r in enumerate(self.rows) if r.note is not None and r.note.cell_len > NOTE_INLINE_MAX]
        return {i: n for n, i in enumerate(long, start=1)}

    def footnotes(self) -> Text | None:
        """`[n] <case id>: <note>` for each footnoted row: the id again, so that a grep of a log finds the note."""
        marks = self.footnoted()
        if not marks:
            return None
        lines = [Text.assemble(f"[{n}] {self.rows[i].case_id}: ", self.rows[i].note or "") for i, n in marks.items()]
        return Text("\n").join(lines)

    def wide(self) -> Table:
        """The rich table: every cell on one line, at its natural width (title and caption go above and under it,
        unpadded: a table's own are padded with spaces to the table's width, which a CI log keeps at line ends).
        A long note is a number after the verdict (`footnoted`), its text under the table (`footnotes`)."""
        table = Table()
        marks = self.footnoted()
        keep = self.shown()
        table.add_column(self.id_header, no_wrap=True)
        for j in keep:
            col = self.columns[j]
            table.add_column(col.header, justify="right" if col.justify == "right" else "left", no_wrap=True)
        if self.note_header is not None:
            table.add_column(self.note_header, no_wrap=True)
        last = len(self.columns) - 1
        for i, r in enumerate(self.rows):
            cells = [
                r.cells[j]
                if j != last or r.note is None or self.note_header is not None
                else Text.assemble(r.cells[j], f" [{marks[i]}]")
                if i in marks
                else Text.assemble(r.cells[j], self.note_around[0], r.note, self.note_around[1])
                for j in keep
            ]
            if self.note_header is not None:
                cells.append(r.note or Text("-"))
            table.add_row(Text(r.case_id), *cells)
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[RenderableType]:
        wide = self.wide()
        if natural_width(console, options, wide) <= options.max_width:
            if self.title:
                yield Text(self.title, style="italic")
            yield wide
            footnotes = self.footnotes()
            if footnotes is not None:
                yield footnotes
            if self.caption is not None:
                yield self.caption
        else:
            yield compact(self, options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = natural_width(console, options, self.wide())
        return Measurement(min(width, options.max_width), min(width, options.max_width))


def natural_width(console: Console, options: ConsoleOptions, renderable: RenderableType) -> int:
    """The width `renderable` takes when given all it wants."""
    return Measurement.get(console, options.update_width(MEASURE_WIDTH), renderable).maximum


def _widths(table: CaseTable, keep: Iterable[int]) -> dict[int, int]:
    return {j: max([len(table.columns[j].header), *(r.cells[j].cell_len for r in table.rows)]) for j in keep}


def fitting_columns(table: CaseTable, width: int) -> tuple[list[int], list[str]]:
    """The compact layout's columns at `width`, and the headers of those dropped to fit: dropped in
    `drop_order` until the line fits (the verdict column is never dropped)."""
    keep = table.shown()
    widths = _widths(table, keep)
    dropped: list[str] = []
    for header in table.drop_order:
        if INDENT + sum(widths[j] for j in keep) + GAP * (len(keep) - 1) <= width:
            break
        j = next((j for j in keep[:-1] if table.columns[j].header == header), None)
        if j is not None:
            keep.remove(j)
            dropped.append(header)
    return keep, dropped


def _line(cells: Iterable[tuple[Text, int, str]]) -> Text:
    line = Text(" " * INDENT)
    for i, (cell, width, justify) in enumerate(cells):
        pad = " " * (width - cell.cell_len)
        line.append(" " * GAP if i else "")
        line.append_text(Text.assemble(pad, cell) if justify == "right" else Text.assemble(cell, pad))
    line.rstrip()
    return line


def compact(table: CaseTable, width: int) -> Group:
    """Each case id on its own line (broken only between its parts when longer than the width), its rows below
    it, indented, with the columns that fit; notes on their own lines."""
    keep, dropped = fitting_columns(table, width)
    widths = _widths(table, keep)
    parts: list[RenderableType] = []
    if table.title:
        parts.append(Text(table.title, style="italic"))
    headers = [(Text(table.columns[j].header, style="bold"), widths[j], table.columns[j].justify) for j in keep]
    parts.append(Text.assemble(Text(table.id_header, style="bold"), "\n", _line(headers)))
    previous: str | None = None
    for r in grouped(table.rows):
        if r.case_id != previous:
            parts.extend(Text(piece, style="bold") for piece in id_lines(r.case_id, width))
            previous = r.case_id
        parts.append(_line((r.cells[j], widths[j], table.columns[j].justify) for j in keep))
        if r.note is not None:
            note = r.note if table.note_header is None else Text.assemble(f"{table.note_header}: ", r.note)
            parts.append(Padding(note, (0, 0, 0, NOTE_INDENT)))
    notes = [f"not shown at this width: {', '.join(dropped)} (a wider terminal or --format json)"] if dropped else []
    if table.caption is not None or notes:
        caption = Text("\n".join(notes), style="dim")
        if table.caption is not None:
            caption = Text.assemble(table.caption, "\n" if notes else "", caption)
        parts.append(caption)
    return Group(*parts)


def grouped(rows: Sequence[CaseRow]) -> list[CaseRow]:
    """The rows with each case's together, at the place of its first (most urgent) row: the compact layout names
    a case once, above all its rows, where the wide one orders rows by urgency alone."""
    by_case: dict[str, list[CaseRow]] = {}
    for r in rows:
        by_case.setdefault(r.case_id, []).append(r)
    return [r for same in by_case.values() for r in same]


def _break_at(text: str, width: int) -> int:
    """Where to break `text` (longer than `width`) at most `width` characters in: the last place between its
    parts, else between words, else at `width`."""
    head = text[: width + 2]  # a break further in is too far
    for after, before in ((_BREAK_AFTER, _BREAK_BEFORE), (_SOFT_BREAK_AFTER, ())):
        cuts = [i + len(s) for s in after for i in range(len(head)) if head.startswith(s, i)]
        cuts += [i for s in before for i in range(1, len(head)) if head.startswith(s, i)]
        fitting = [c for c in cuts if 0 < c <= width]
        if fitting:
            return max(fitting)
    return width


def id_lines(case_id: str, width: int) -> list[str]:
    """`case_id` as lines of at most `width` cells of the terminal (a CJK character takes two: counted as one, a
    line overflowed and the terminal library broke it mid-word), broken only between its parts where it can be."""
    lines, rest = [], case_id
    while cell_len(rest) > width > 0:
        cut = _break_at(rest, max(1, _chars_within(rest, width)))
        lines.append(rest[:cut])
        rest = rest[cut:]
    return [*lines, rest]


def _chars_within(text: str, cells: int) -> int:
    """How many of `text`'s first characters fit in `cells` cells."""
    used = 0
    for n, ch in enumerate(text):
        used += cell_len(ch)
        if used > cells:
            return n
    return len(text)
