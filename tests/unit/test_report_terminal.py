"""Terminal tables: the same verdicts, most urgent first, and a summary for big suites."""

from __future__ import annotations

import time

import pytest
from rich.cells import cell_len
from rich.console import Console

from perfci.format.model import CaseResult, CaseSpec, Comparison, MetricComparison, RunResult, Verdict
from perfci.metrics import case_metrics
from perfci.reports.case_table import NOTE_INLINE_MAX, id_lines
from perfci.reports.junit import render_junit
from perfci.reports.terminal import SUMMARY_ABOVE, SUMMARY_OTHER_ROWS, comparison_table, run_table, verdict_line
from tests.report_fixtures import suite_comparison


def _text(table: object) -> str:
    console = Console(width=220, record=True, no_color=True)
    console.print(table)
    return console.export_text()


def _case_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "@cpu" in line]


def test_comparison_table_urgent_first_and_limited() -> None:
    _, cand, comp = suite_comparison(12)
    assert len(comp.rows) <= SUMMARY_ABOVE  # a small comparison: every row
    text = _text(comparison_table(comp, limit=5))
    lines = _case_lines(text)
    assert len(lines) == 5
    assert "regression" in lines[0] and "error" in lines[1]
    assert f"... and {len(comp.rows) - 5:,} more rows (see report.html)" in text
    assert len(_case_lines(_text(comparison_table(comp)))) == len(comp.rows)
    assert verdict_line(comp, cand).startswith("FAIL: 1 regression, 1 error, 1 inconclusive")


def test_large_comparison_lists_every_row_not_unchanged_then_counts() -> None:
    _, _, comp = suite_comparison(200)
    assert len(comp.rows) > SUMMARY_ABOVE
    text = _text(comparison_table(comp))
    lines = _case_lines(text)
    listed = [r for r in comp.rows if r.verdict is not Verdict.UNCHANGED]
    assert len(lines) == len(listed) and not any("unchanged" in line for line in lines)
    assert "regression" in lines[0]
    unchanged = len(comp.rows) - len(listed)
    assert (
        f"{len(comp.rows):,} rows: 4 regressions, 4 errors, 4 inconclusive, 4 improvements, {unchanged:,} unchanged"
        in text
    )
    flat = " ".join(text.split())  # the caption wraps where the table's width says
    assert f"not listed: the {unchanged:,} unchanged (every row" in flat and "--format json" in flat
    # with a limit too: the rows cut are counted, and so is every verdict
    limited = _text(comparison_table(comp, limit=3))
    assert len(_case_lines(limited)) == 3
    assert f"... and {len(listed) - 3:,} more rows (see report.html)" in limited
    assert f"{len(comp.rows):,} rows:" in limited


def test_summary_threshold_is_a_parameter() -> None:
    _, _, comp = suite_comparison(12)
    text = _text(comparison_table(comp, summary_above=5))
    assert len(_case_lines(text)) == sum(1 for r in comp.rows if r.verdict is not Verdict.UNCHANGED)


def test_a_20000_row_comparison_renders_quickly() -> None:
    """Unchanged rows are not rendered at all: a huge comparison with a few changes prints a few rows."""
    rows = tuple(
        MetricComparison(f"k.case[n={i}]@cpu", "latency.median", Verdict.REGRESSION if i % 1000 == 0 else
                         Verdict.UNCHANGED, "s", 1e-3, 1e-3, 1.0, 0.99, 1.01, 0.03)
        for i in range(20_000)
    )  # fmt: skip
    start = time.perf_counter()
    text = _text(comparison_table(Comparison("a", "b", rows)))
    assert time.perf_counter() - start < 5.0
    assert len(_case_lines(text)) == 20
    assert "20,000 rows: 20 regressions, 19,980 unchanged" in text


def test_many_rows_that_do_not_fail_are_capped_but_failing_ones_never() -> None:
    """5,000 inconclusive rows (an unpaired comparison of noisy cases) and 300 regressions: every regression and
    error is listed, then the first SUMMARY_OTHER_ROWS of the rest; the caption counts what is left out."""

    def row(i: int, verdict: Verdict) -> MetricComparison:
        return MetricComparison(f"k.case[n={i}]@cpu", "latency.median", verdict, "s", 1e-3, 1.1e-3, 1.1, 0.9, 1.3)

    rows = [row(i, Verdict.INCONCLUSIVE) for i in range(5000)] + [row(5000 + i, Verdict.REGRESSION) for i in range(300)]
    rows += [row(6000 + i, Verdict.ERROR) for i in range(20)] + [row(7000 + i, Verdict.UNCHANGED) for i in range(50)]
    comparison = Comparison("a", "b", tuple(rows))
    start = time.perf_counter()
    text = _text(comparison_table(comparison))
    assert time.perf_counter() - start < 5.0
    lines = _case_lines(text)
    assert len(lines) == 300 + 20 + SUMMARY_OTHER_ROWS
    assert sum("regression" in line for line in lines) == 300 and sum("error" in line for line in lines) == 20
    flat = " ".join(text.split())
    assert f"not listed: the 50 unchanged and {5000 - SUMMARY_OTHER_ROWS:,} more that do not fail the gate" in flat


def test_the_run_table_shows_each_case_own_memory() -> None:
    from tests.conftest import make_case, make_run

    console = Console(width=160, record=True)
    console.print(run_table(make_run([make_case("a", 1e-3)])))
    text = console.export_text()
    assert "memory (own)" in text and "host 977 KiB" in text


# --- widths: ids and verdict words whole at any width (reports/case_table.py) ---

LONG_IDS = (
    "tests/bench/test_bench_style.py::test_fib_plain@cpu",
    "tests/bench/test_bench_style.py::test_sort_numbers_large@cpu",
)


def _narrow_comparison() -> Comparison:
    rows = (
        MetricComparison(
            LONG_IDS[0], "latency.median", Verdict.REGRESSION, "s", 1e-3, 1.25e-3, 1.25, 1.2, 1.3, mdc=0.03
        ),
        MetricComparison(
            LONG_IDS[1], "latency.median", Verdict.INCONCLUSIVE, "s", 1e-3, 1.01e-3, 1.01, 0.8, 1.3, mdc=0.2
        ),
        MetricComparison(LONG_IDS[1], "memory.host", Verdict.UNCHANGED, "B", 2**20, 2**20, 1.0, 1.0, 1.0),
        MetricComparison(LONG_IDS[0], "memory.host", Verdict.UNCHANGED, "B", 2**20, 2**20, 1.0, 1.0, 1.0),
    )
    return Comparison("baseline/results.json", "candidate/results.json", rows)


def _at(width: int, renderable: object) -> str:
    console = Console(width=width, record=True, force_terminal=True, color_system=None)
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize("width", [60, 80, 200])
def test_ids_and_verdict_words_are_whole_at_any_width(width: int) -> None:
    text = _at(width, comparison_table(_narrow_comparison()))
    lines = text.splitlines()
    assert "…" not in text
    assert all(len(line.rstrip()) <= width for line in lines)
    for case_id in LONG_IDS:  # each id whole on one line: a grep of the output finds it
        assert any(case_id in line for line in lines), (case_id, text)
    words = [w for line in lines for w in line.replace("│", " ").split()]
    assert words.count("regression") == 1 and words.count("inconclusive") == 1 and words.count("unchanged") == 2
    if width < 100:  # compact: the id on its own line, its rows under it; the ids are not repeated per row
        assert lines.count(LONG_IDS[0]) == 1 and "─" not in text  # once, above both its rows
        regression = lines.index(LONG_IDS[0]) + 1
        assert lines[regression].split()[0] == "latency.median" and lines[regression].split()[-1] == "regression"
    else:  # wide: the rich table, one row per line
        assert any(LONG_IDS[0] in line and "regression" in line for line in lines)


def test_narrow_layout_names_the_columns_it_dropped_and_keeps_the_change() -> None:
    text = _at(60, comparison_table(_narrow_comparison()))
    assert "+25.0%" in text and "99% interval" not in text.splitlines()[2]
    assert "not shown at this width: detects, 99% interval" in " ".join(text.split())
    assert "not shown" not in _at(200, comparison_table(_narrow_comparison()))


def test_an_id_longer_than_the_width_breaks_only_between_its_parts() -> None:
    case_id = "benchmarks/very/deep/folder/test_module_with_a_long_name.py::test_one[size=4096,dtype=float32]@cpu"
    lines = id_lines(case_id, 40)
    assert "".join(lines) == case_id and all(len(line) <= 40 for line in lines)
    assert lines[0].endswith("/") and any(line.startswith(("test_one", "[", "@")) for line in lines[1:])
    assert id_lines("x" * 90, 40) == ["x" * 40, "x" * 40, "x" * 10]  # one word longer than the line: cut at it
    # wide characters take two cells: an id of them was measured in characters, overflowed its column, and the
    # terminal library broke it mid-word (a user audit)
    wide = "推論ワークロード推論ワークロード推論ワーク[mode=fastestconfigurationvariantxyz]@cpu"
    lines = id_lines(wide, 40)
    assert "".join(lines) == wide and all(cell_len(line) <= 40 for line in lines), lines
    assert any("[mode=fastestconfigurationvariantxyz]" in line for line in lines), lines
    text = _at(40, comparison_table(Comparison("a", "b", (MetricComparison(case_id, "latency.median",
                                                                            Verdict.REGRESSION),))))  # fmt: skip
    assert "test_module_with_a_long_name.py::" in text and "regression" in text.split()


def test_a_note_gets_its_own_line_when_narrow_and_follows_the_verdict_when_wide() -> None:
    note = "expected: the new allocator trades memory for speed (EXPECTED_CHANGES.md)"
    row = MetricComparison(LONG_IDS[0], "latency.median", Verdict.IMPROVEMENT, "s", 1e-3, 8e-4, 0.8, note=note)
    narrow = _at(80, comparison_table(Comparison("a", "b", (row,))))
    assert "improvement" in narrow.split() and note in " ".join(narrow.split())
    assert not any("improvement" in line and "expected" in line for line in narrow.splitlines())
    assert f"improvement ({note})" in _at(300, comparison_table(Comparison("a", "b", (row,))))


def test_a_long_note_goes_under_the_wide_table_numbered_and_the_rows_keep_their_width() -> None:
    """A note over NOTE_INLINE_MAX (an implausible bandwidth's reason, a long error) padded every row of a CI log's
    table to its width; now its row holds `[n]` after the verdict and the note follows the table, after the id."""
    long = "candidate failed: " + "a long message about what went wrong " * 5
    short = "candidate failed: RuntimeError: broken (at wl.py:7)"
    rows = (
        MetricComparison(LONG_IDS[0], "latency.median", Verdict.ERROR, "s", 1e-3, None, note=long),
        MetricComparison(LONG_IDS[1], "latency.median", Verdict.ERROR, "s", 1e-3, None, note=short),
    )
    assert len(long) > NOTE_INLINE_MAX >= len(short)
    text = _at(10_000, comparison_table(Comparison("a", "b", rows)))
    lines = text.splitlines()
    first = next(line for line in lines if LONG_IDS[0] in line and "│" in line)
    assert "│ error [1] " in first and long.strip() not in first
    assert f"[1] {LONG_IDS[0]}: {long.strip()}" in [line.rstrip() for line in lines]  # whole, after the table
    assert f"error ({short})" in next(line for line in lines if LONG_IDS[1] in line)  # a short note stays inline
    assert max(len(line) for line in lines if "│" in line) < len(long)  # no row as wide as the long note
    narrow = _at(80, comparison_table(Comparison("a", "b", rows)))  # compact: notes on lines of their own, no numbers
    assert "[1]" not in narrow and "a long message" in narrow


def _cases(*ids: str, bandwidth: bool = True) -> RunResult:
    """A run of these case ids (pure Python when not `bandwidth`: no bytes moved, so no bandwidth)."""
    from tests.conftest import make_case, make_run

    cases = []
    for case_id in ids:
        c = make_case("x", 1e-3)
        spec = CaseSpec(workload=case_id, params={}, device="cpu", source="tests")
        nbytes = c.bytes if bandwidth else None
        cases.append(CaseResult.of(spec, c.status, c.rounds, case_metrics(c.rounds, None, nbytes), (), None, nbytes))
    return make_run(cases)


def test_columns_empty_in_every_row_are_left_out() -> None:
    text = _at(200, run_table(_cases("tests/test_x.py::test_parse_many_lines", bandwidth=False)))
    assert "bandwidth" not in text and "memory (own)" in text and "status" in text
    assert "bandwidth" in _at(200, run_table(_cases("tests/test_x.py::test_parse_many_lines")))
    unchanged = MetricComparison(LONG_IDS[0], "latency.median", Verdict.UNCHANGED)  # no statistics: no "detects"
    assert "detects" not in _at(200, comparison_table(Comparison("a", "b", (unchanged,))))


def test_the_run_table_at_80_columns_keeps_ids_and_status_whole() -> None:
    text = _at(80, run_table(_cases(*(i.removesuffix("@cpu") for i in LONG_IDS))))
    lines = text.splitlines()
    assert "…" not in text and all(case_id in lines for case_id in LONG_IDS)
    assert [line.split()[-1] for line in lines if line.startswith("  ") and "ms" in line] == ["ok"] * 2


def test_a_byte_metrics_wide_interval_is_shown_in_bytes_a_narrow_one_in_percent() -> None:
    """A 32 KiB peak whose interval runs to +409500% (two pairs of a tiny allocation) reads as byte differences;
    a memory row with a usual interval and every timed row stay in percent."""
    wide = MetricComparison("k.a@cpu", "memory.host", Verdict.UNCHANGED, "B", 32768, 2048, 1 / 16, 0.0, 4096.0)
    narrow = MetricComparison("k.b@cpu", "memory.host", Verdict.UNCHANGED, "B", 2**30, 2**30, 1.0, 0.99, 1.02)
    timed = MetricComparison("k.c@cpu", "latency.median", Verdict.INCONCLUSIVE, "s", 1e-3, 1e-3, 1.0, 0.3, 3.0)
    text = _text(comparison_table(Comparison("a", "b", (wide, narrow, timed))))
    lines = {cid: line for line in _case_lines(text) for cid in ("k.a@cpu", "k.b@cpu", "k.c@cpu") if cid in line}
    assert "-32 KiB .. +128 MiB" in lines["k.a@cpu"] and "+409" not in lines["k.a@cpu"]
    assert "-1.0% .. +2.0%" in lines["k.b@cpu"]
    assert "-70.0% .. +200.0%" in lines["k.c@cpu"]
    junit = render_junit(Comparison("a", "b", (wide, narrow, timed)))  # the CI test report says the same
    assert "[-32 KiB .. +128 MiB]" in junit and "+409" not in junit
    assert "[-1.00% .. +2.00%]" in junit and "[-70.00% .. +200.00%]" in junit


def test_a_memory_figure_of_nothing_reads_0_bytes() -> None:
    """0 bytes is kept as 1 (so that ratios stay finite): a table shows it as 0 B, and an interval from it too."""
    nothing = MetricComparison("k.a@cpu", "memory.host", Verdict.UNCHANGED, "B", 1.0, 1.0, 1.0, 1 / 4096, 4096.0)
    line = next(line for line in _case_lines(_text(comparison_table(Comparison("a", "b", (nothing,))))))
    assert line.count("0 B") >= 3 and "1 B" not in line and "0 B .. +4 KiB" in line, line


def test_a_ci_log_s_lines_carry_no_padding() -> None:
    """stdout that is not a terminal gets lines as wide as the ids need (cli/app.py LOG_WIDTH): the title above the
    table and the caption under it (rows left out, the counts, what it could detect) end where their text does, not
    padded to the table's width."""
    _, _, comp = suite_comparison(12)
    console = Console(width=10_000, record=True, no_color=True)
    console.print(comparison_table(comp, limit=5))
    lines = console.export_text().splitlines()
    assert any(line.startswith("... and ") for line in lines)
    assert [line for line in lines if line != line.rstrip()] == []


def test_a_narrow_table_names_each_case_once_above_all_its_rows() -> None:
    """Rows are ordered by urgency, so one case's rows need not be neighbours (its regression first, its unchanged
    memory row last); the compact layout gathers them under one id, in the order of each case's first row."""
    text = _at(60, comparison_table(_narrow_comparison()))
    ids = [line for line in text.splitlines() if line.endswith("@cpu")]
    assert ids == list(dict.fromkeys(ids)) and len(ids) == 2, text
    lines = text.splitlines()
    first = lines.index(ids[0])
    assert [line.split()[0] for line in lines[first + 1 : first + 3]] == ["latency.median", "memory.host"], text


def test_changes_past_tenfold_read_as_multiples() -> None:
    from perfci.reports.units import format_change_interval, format_ratio

    assert format_ratio(1.034) == "+3.4%"
    assert format_ratio(0.5) == "-50.0%"
    assert format_ratio(10.0) == "+900.0%"  # tenfold still a percentage
    assert format_ratio(420.0) == "420x"
    assert format_ratio(2050.0) == "2,050x"  # not "2.05e+03x"
    assert format_ratio(1 / 3000) == "0.000333x"  # not "-100.0%"
    assert format_ratio(None) == "-" and format_ratio(float("inf")) == "-"
    assert format_change_interval(300.0, 540.0) == "300x .. 540x"


def test_a_minimum_detectable_change_past_tenfold_says_nothing_practical_is_seen() -> None:
    """Two rounds of a noisy case printed "could detect changes of 10250779625% or more"."""
    from dataclasses import replace

    from perfci.reports.verdicts import Sensitivity, format_mdc

    assert (format_mdc(0.011), format_mdc(0.85), format_mdc(8.5), format_mdc(1.0e8)) == ("1.1%", "85%", "850%", ">10x")
    row = MetricComparison("t.a@cpu", "latency.median", Verdict.INCONCLUSIVE, "s", 1e-3, 1e-3, mdc=1.0e8)
    wide = Sensitivity(mdc=1.0e8, covered=1, timed=1, paired=False, least=row)
    assert wide.sentence() == (
        "this comparison could detect no change smaller than tenfold in its case: too few rounds, or too much noise, "
        "to see a practical change"
    )
    assert "changes of 85% or more" in replace(wide, mdc=0.85).sentence()
    assert "in at least one of its 2 cases:" in replace(wide, timed=2, covered=2).sentence()


def test_bytes_between_1000_and_1023_of_a_unit_are_written_in_full() -> None:
    from perfci.reports.units import format_bytes

    assert format_bytes(1008 * 1024) == "1008 KiB"  # was "1.01e+03 KiB"
    assert (format_bytes(1.5 * 2**20), format_bytes(123.4 * 1024), format_bytes(512)) == ("1.5 MiB", "123 KiB", "512 B")


def test_a_small_memory_figures_interval_reads_in_bytes() -> None:
    """Memory comes in pages: a 4 KiB case read "+0.0% .. +100.0%" for one page."""
    from perfci.reports.units import format_change_interval

    assert format_change_interval(1.0, 2.0, 4096, "B") == "0 B .. +4 KiB"
    assert format_change_interval(0.9, 1.1, 8 * 2**20, "B") == "-10.0% .. +10.0%"  # a larger figure: percent


def test_control_characters_in_messages_reach_no_report_raw() -> None:
    """An error message holding ESC made junit.xml not well-formed and reached summary.md raw."""
    import xml.etree.ElementTree as ET

    from perfci.reports.markdown import code

    bad = "bad \x1b[2J\x1b[31mRED\nsecond\rline"
    row = MetricComparison("t.a@cpu", "latency.median", Verdict.ERROR, "s", 1e-3, None, note=bad)
    comparison = Comparison("b", "c", (row,), ())
    ET.fromstring(render_junit(comparison).split("\n", 1)[1])  # well-formed
    assert "\\x1b[2J" in render_junit(comparison) and "\x1b" not in render_junit(comparison)
    assert code(bad) == "`bad \\x1b[2J\\x1b[31mRED second line`"


def test_an_allowed_missing_row_says_why_it_passes() -> None:
    """An audit: with `--allow-missing` the row read `missing` and the headline `PASS: 1 missing`; the reason was in
    the JSON only."""
    allowed = MetricComparison(
        "w.old@cpu", "latency.median", Verdict.MISSING, expected="missing allowed (--allow-missing)"
    )
    text = _text(comparison_table(Comparison("a", "b", (allowed,))))
    assert "missing allowed (--allow-missing)" in text
