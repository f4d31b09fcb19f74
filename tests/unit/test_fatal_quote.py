"""A worker's fatal-error dump (faulthandler) quoted as the error and the user's innermost frame."""

from __future__ import annotations

from pathlib import Path

from perfci.engine.supervisor import _stderr_tail

DUMP = """\
some earlier output
Fatal Python error: Segmentation fault

Current thread 0x00007fc061699b80 (most recent call first):
  File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at
  File "/tmp/perfci-x/base/bench/test_mp.py", line 9 in test_crash
  File "/venv/lib/python3.11/site-packages/_pytest/python.py", line 187 in pytest_pyfunc_call
  File "/tmp/perfci-x/shim/perfci/workloads/pytest_capture.py", line 273 in pytest_runtestloop
  File "/tmp/perfci-x/shim/perfci/engine/worker.py", line 250 in main

Extension modules: msgspec._core, numpy._core._multiarray_umath (total: 2)
"""


def test_a_segfault_dump_is_quoted_at_the_users_frame(tmp_path: Path) -> None:
    log = tmp_path / "w.log"
    log.write_text(DUMP)
    assert _stderr_tail(log) == "; worker stderr: Fatal Python error: Segmentation fault; at test_mp.py:9 in test_crash"


def test_a_dump_in_library_code_only_quotes_its_innermost_frame(tmp_path: Path) -> None:
    log = tmp_path / "w.log"
    log.write_text('Fatal Python error: Aborted\n\n  File "/venv/lib/python3.11/site-packages/x/y.py", line 3 in f\n')
    assert _stderr_tail(log) == "; worker stderr: Fatal Python error: Aborted; at y.py:3 in f"


def test_other_output_keeps_its_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "w.log"
    log.write_text("a\nb\nc\nd\n")
    assert _stderr_tail(log) == "; worker stderr: b | c | d"
