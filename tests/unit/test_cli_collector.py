"""The commands that read results files and end run with the cyclic garbage collector off (perfci/cli/__init__.py);
the others, which measure or keep a store open, keep it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from perfci.cli import collector_off_for


@pytest.fixture
def collector() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()


@pytest.mark.parametrize(
    ("argv", "off"),
    [
        (["compare", "a.json", "b.json", "--format", "json"], True),
        (["report", "c.json"], True),
        (["merge", "a.json", "b.json", "--out", "d"], True),
        (["baseline", "update", "c.json"], True),
        (["run", "perf/"], False),
        (["ab", "main"], False),
        (["history", "ingest", "x.json"], False),
        (["--help"], False),
        ([], False),
    ],
)
def test_reading_commands_turn_the_collector_off(collector: None, argv: list[str], off: bool) -> None:
    collector_off_for(argv)
    assert gc.isenabled() is not off
