"""`perfci compare` on a real 80-column pseudo-terminal, and into a pipe (a CI log): whole case ids and whole
verdict words either way."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from perfci.format.schema import dump_results
from tests.conftest import make_case, make_run

pytestmark = pytest.mark.integration  # no verdict or time-out of a real measurement: runs beside other tests

NAMES = ("tests/bench/test_bench_style.py::test_fib_plain", "tests/bench/test_bench_style.py::test_sort_numbers_large")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _files(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    base = [make_case(n, 1e-3, rounds=10, seed=1, noise=0.002) for n in NAMES]
    cand = [make_case(n, 1e-3, rounds=10, seed=2, noise=0.002, scale=2.0 if n == NAMES[0] else 1.0) for n in NAMES]
    dump_results(make_run(base), tmp_path / "base.json")
    dump_results(make_run(cand), tmp_path / "cand.json")
    return tmp_path / "base.json", tmp_path / "cand.json", [c.id for c in base]


def _in_pty(args: list[str], columns: int) -> tuple[int, str]:
    """Run `args` with stdout and stderr on a pseudo-terminal `columns` wide; (exit code, what it printed)."""
    main, side = pty.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "TERM")}
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=side, stderr=side, env={**env, "TERM": "xterm"})
    os.close(side)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    return proc.wait(timeout=120), ANSI.sub("", b"".join(chunks).decode()).replace("\r\n", "\n")


def test_compare_on_an_80_column_terminal_keeps_ids_and_verdicts_whole(tmp_path: Path) -> None:
    base, cand, ids = _files(tmp_path)
    code, text = _in_pty([sys.executable, "-m", "perfci", "compare", str(base), str(cand)], 80)
    assert code == 1, text
    lines = [line.rstrip() for line in text.splitlines()]
    assert "…" not in text
    assert all(len(line) <= 80 for line in lines), text  # notes and the verdict line wrap at words too
    regressed = lines.index(ids[0])  # the id whole, on its own line, its verdict on the row below
    assert lines[regressed + 1].split()[0] == "latency.median" and lines[regressed + 1].split()[-1] == "regression"
    assert ids[1] in lines and "inconclusive" in text.split()


def test_compare_into_a_pipe_prints_each_row_on_one_line(tmp_path: Path) -> None:
    base, cand, ids = _files(tmp_path)
    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.run([sys.executable, "-m", "perfci", "compare", str(base), str(cand)], capture_output=True,
                          text=True, env=env, timeout=120)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert any(ids[0] in line and "regression" in line for line in proc.stdout.splitlines()), proc.stdout
    assert "…" not in proc.stdout


def _disjoint(tmp_path: Path) -> tuple[Path, Path, str, str]:
    """Two results files with no case in common: the error names an id of each, in a message over 80 columns."""
    first = make_case("tests/bench/test_bench_style.py::test_tokenize_paragraphs", 1e-3, rounds=3, seed=1)
    second = make_case("tests/other/test_decode_frames.py::test_decode_frames_in_batches", 1e-3, rounds=3, seed=2)
    dump_results(make_run([first]), tmp_path / "a.json")
    dump_results(make_run([second]), tmp_path / "b.json")
    return tmp_path / "a.json", tmp_path / "b.json", first.id, second.id


def test_an_error_on_an_80_column_terminal_wraps_at_words(tmp_path: Path) -> None:
    a, b, first, second = _disjoint(tmp_path)
    code, text = _in_pty([sys.executable, "-m", "perfci", "compare", str(a), str(b)], 80)
    assert code == 2, text
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    assert len(lines) > 2 and all(len(line) <= 80 for line in lines), text
    words = " ".join(lines).split()  # joined again at the wraps: each id and every word comes back whole
    assert f"'{first}'" in words and any(second in w for w in words), text
    assert words[0] == "error:" and "hint:" in words


def test_an_error_into_a_pipe_stays_on_one_line(tmp_path: Path) -> None:
    a, b, first, second = _disjoint(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "perfci", "compare", str(a), str(b)], capture_output=True,
                          text=True, env={**os.environ, "COLUMNS": "80"}, timeout=120)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    error = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and first in error[0] and second in error[0] and len(error[0]) > 80, proc.stderr


def test_a_width_below_twenty_is_ignored_and_a_log_keeps_every_line_whole(tmp_path: Path) -> None:
    """COLUMNS=0 printed no error at all (exit 2, nothing on stderr) and lost the verdict; COLUMNS=5 cut words in
    two; `report` wrapped its verdict and its paths at 80 columns in a log (a user audit)."""
    a, b, first, _ = _disjoint(tmp_path)
    base, cand, _ = _files(tmp_path)
    for columns in ("0", "5", "80"):
        env = {**os.environ, "COLUMNS": columns}
        proc = subprocess.run([sys.executable, "-m", "perfci", "compare", str(a), str(b)], capture_output=True,
                              text=True, env=env, timeout=120)  # fmt: skip
        assert proc.returncode == 2 and proc.stderr.startswith("error: nothing to compare:"), (columns, proc.stderr)
        assert first in proc.stderr.splitlines()[0], proc.stderr
        out = tmp_path / ("a-very-long-folder-name-for-the-report-" * 3) / columns
        proc = subprocess.run([sys.executable, "-m", "perfci", "report", str(base), str(cand), "--out",
                               str(out)], capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
        lines = proc.stderr.splitlines()
        assert any(line.startswith("FAIL: 1 regression") and line.endswith("cases)") for line in lines), proc.stderr
        assert f"report: {out / 'report.html'}" in lines, proc.stderr
    code, text = _in_pty([sys.executable, "-m", "perfci", "compare", str(a), str(b)], 80)  # COLUMNS unset
    assert code == 2 and "error: nothing to compare" in text, text


def test_list_on_a_60_column_terminal_keeps_long_ids_whole(tmp_path: Path) -> None:
    """`perfci list` broke ids with hard line breaks at the terminal's edge: a copied id was broken."""
    (tmp_path / "w.py").write_text(
        "import perfci\n"
        "@perfci.workload(params={'configuration_name': ['a_rather_long_configuration_value_for_the_test']})\n"
        "def keeps_going_and_going_and_going_and_going_forever(ctx, configuration_name):\n"
        "    return lambda: None\n"
    )
    code, text = _in_pty([sys.executable, "-m", "perfci", "list", str(tmp_path / "w.py")], 60)
    assert code == 0, text
    name = "w.keeps_going_and_going_and_going_and_going_forever"
    whole = f"{name}[configuration_name=a_rather_long_configuration_value_for_the_test]@cpu"
    assert whole in text.splitlines(), text


def _first_line_then_close(args: list[str]) -> tuple[int, str, str]:
    """Run `args`, read one line of stdout and close it, as `| head -1` does; (exit code, that line, stderr)."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    return proc.wait(timeout=120), line, err


def test_a_reader_that_stops_reading_leaves_the_exit_code_and_the_verdict(tmp_path: Path) -> None:
    """`perfci compare ... | head -1` exited 1, the regression code, even with --exit-zero, and lost the verdict on
    stderr; `perfci list | head -1` exited 1 (a user audit). Each output is well past a pipe's 64 KiB."""
    (tmp_path / "many.py").write_text(
        "import perfci\n"
        "@perfci.workload(params={'a': list(range(100)), 'b': [f'value_{i}_long_enough_to_fill_a_pipe' for i in "
        "range(90)]})\n"
        "def g(ctx, a, b):\n"
        "    return lambda: None\n"
    )
    code, line, err = _first_line_then_close([sys.executable, "-m", "perfci", "list", str(tmp_path / "many.py")])
    assert (code, line.strip()) == (0, "many.g[a=0,b=value_0_long_enough_to_fill_a_pipe]@cpu"), err
    names = [f"t.case_number_{i}_of_a_long_suite_with_a_long_name" for i in range(1500)]
    dump_results(make_run([make_case(n, 1e-3, rounds=10, noise=0.002) for n in names]), tmp_path / "base.json")
    cand = [
        make_case(n, 1e-3, rounds=10, seed=1, noise=0.002, scale=2.0 if i == 0 else 1.0) for i, n in enumerate(names)
    ]
    dump_results(make_run(cand), tmp_path / "cand.json")
    args = [sys.executable, "-m", "perfci", "compare", str(tmp_path / "base.json"), str(tmp_path / "cand.json")]
    code, line, err = _first_line_then_close(args)
    assert code == 1 and "FAIL: 1 regression" in err, err
    code, line, err = _first_line_then_close([*args, "--exit-zero"])
    assert code == 0 and "FAIL: 1 regression" in err, err


def test_a_reader_of_both_streams_that_stops_reading_leaves_the_exit_code(tmp_path: Path) -> None:
    """`perfci compare ... 2>&1 | head -1` exited 1 even with --exit-zero, and `perfci list 2>&1 | head -1` too (a
    user audit): stderr shares the closed pipe."""
    names = [f"t.case_number_{i}_of_a_long_suite_with_a_long_name" for i in range(1500)]
    dump_results(make_run([make_case(n, 1e-3, rounds=10, noise=0.002) for n in names]), tmp_path / "base.json")
    args = [sys.executable, "-m", "perfci", "compare", str(tmp_path / "base.json"), str(tmp_path / "base.json")]
    for extra, want in (((), 0), (("--exit-zero",), 0)):
        proc = subprocess.Popen([*args, *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        proc.stdout.readline()
        proc.stdout.close()
        assert proc.wait(timeout=120) == want
