"""The supervisor's words for a worker over its memory limit: the limit in the unit it was given in (64 MiB was
shown as "0.1 GiB"), and what the worker's processes held."""

from __future__ import annotations

import os
import re

import psutil

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
