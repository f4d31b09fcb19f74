"""The pytest plugin's summary at the width it is shown at: an audit found its tables never narrower than 120
columns (an 80-column terminal wrapped verdict words mid-word) and its notes one 267-character line."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.cells import cell_len

from perfci.format.model import Comparison, MetricComparison, Verdict
from perfci.pytest_plugin.plugin import _lines, _output_width, _table_text
from perfci.reports.case_table import LOG_WIDTH
from perfci.reports.terminal import comparison_table


class _File(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def _reporter(tty: bool, width: int) -> SimpleNamespace:
    return SimpleNamespace(_tw=SimpleNamespace(_file=_File(tty), fullwidth=width))


ID = "bench/test_bench_style.py::test_sort_numbers_large_with_a_long_name@cpu"


def test_a_terminal_gets_its_own_width_and_a_log_whole_lines() -> None:
    assert _output_width(_reporter(True, 80)) == (80, True)
    assert _output_width(_reporter(False, 80)) == (LOG_WIDTH, False)
    row = MetricComparison(ID, "latency.median", Verdict.INCONCLUSIVE, "s", 1e-3, 1.2e-3, ratio=1.2, ratio_low=0.9,
                           ratio_high=1.6)  # fmt: skip
    table = comparison_table(Comparison("base/results.json", "candidate", (row,)))
    narrow = _table_text(table, 80)
    assert max(cell_len(line) for line in narrow.splitlines()) <= 80
    assert any(line.strip() == ID for line in narrow.splitlines())  # the compact layout: the id whole, on its line
    assert "inconclusive" in narrow.split() and "…" not in narrow
    wide = _table_text(table, LOG_WIDTH)
    assert any(ID in line and "inconclusive" in line for line in wide.splitlines())  # one line for grep


def test_a_note_wraps_at_spaces_on_a_terminal_and_stays_whole_in_a_log() -> None:
    note = "note: " + " ".join(["not-settled-at-the-practical-threshold"] * 8) + " `perfci ab BASE_REV --pytest bench`"
    wrapped = _lines(note, 80, True).splitlines()
    assert len(wrapped) > 1 and all(cell_len(line) <= 80 for line in wrapped)
    assert " ".join(wrapped) == note  # broken only at spaces: no word cut
    assert _lines(note, LOG_WIDTH, False) == note
