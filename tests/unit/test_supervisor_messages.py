"""The supervisor's words for a worker over its memory limit: the limit in the unit it was given in (64 MiB was
shown as "0.1 GiB"), and what the worker's processes held."""

from __future__ import annotations

import os
import re
from pathlib import Path

import psutil
import pytest

from perfci.engine.supervisor import Limits, _memory_exceeded, _mib_or_gib


def test_sizes_in_mib_below_a_gib_and_gib_above() -> None:
    assert _mib_or_gib(64 * 2**20) == "64 MiB"
    assert _mib_or_gib(200 * 2**20) == "200 MiB"
    assert _mib_or_gib(1.5 * 2**30) == "1.5 GiB"


def test_over_the_limit_says_the_limit_and_what_was_held() -> None:
    me = psutil.Process(os.getpid())
    held = me.memory_info().rss
    assert _memory_exceeded(me, Limits(case_timeout_s=60, memory_limit_bytes=held * 100)) is None
    message = _memory_exceeded(me, Limits(case_timeout_s=60, memory_limit_bytes=2**20))
    assert message is not None and message.startswith(
        "exceeded the memory limit of 1 MiB: the worker's processes held "
    )
    shown = float(re.search(r"held ([\d.]+) MiB", message).group(1))  # type: ignore[union-attr]
    assert 0.5 * held / 2**20 < shown < 2 * held / 2**20


def test_a_log_past_the_cap_is_cut_to_its_head_and_its_tail_still_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workload printing 64 KiB a call left 915 MB of worker logs: past the cap the log keeps its head, says
    what was cut, and the worker's last words (appended after the cut) are still its tail."""
    from perfci.engine import supervisor

    monkeypatch.setattr(supervisor, "LOG_CAP_BYTES", 10_000)
    monkeypatch.setattr(supervisor, "LOG_KEPT_BYTES", 1_000)
    log = tmp_path / "worker.log"
    with log.open("ab") as worker:  # the worker's own handle, appending, as spawn_worker opens it
        worker.write(b"x" * 9_000)
        worker.flush()
        supervisor._cap_log(log)
        assert log.stat().st_size == 9_000  # under the cap: untouched
        since = log.stat().st_size  # a case starts here
        worker.write(b"y" * 5_000)
        worker.flush()
        supervisor._cap_log(log)
        worker.write(b"\nFatal Python error: Segmentation fault\n")
        worker.flush()
    text = log.read_bytes()
    assert text.startswith(b"x" * 1_000) and b"x" * 1_001 not in text
    assert b"[perfci: this worker's output passed 0 MiB; 0 MiB after its first 0 MiB were cut here]" in text
    assert "Segmentation fault" in supervisor._stderr_tail(log, since=since)  # its start was cut: read from the cut
