"""Input files read from a pipe or a device: whole when they end, refused past a size when they never do
(`perfci compare /dev/zero` filled the memory and ended in a MemoryError traceback)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.cli import app
from perfci.errors import ResultsFormatError
from perfci.format import jsonfile
from perfci.format.jsonfile import read_bytes
from perfci.importers.pytest_benchmark import import_pytest_benchmark


def test_a_pipe_is_read_whole_in_chunks(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    data = os.urandom(3 * (1 << 20) + 17)  # more than one chunk, and not a whole number of them

    def write() -> None:
        with open(fifo, "wb") as f:
            f.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    assert read_bytes(fifo, "results") == data
    writer.join()


def test_a_device_that_never_ends_is_refused_past_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonfile, "MAX_STREAM_BYTES", 5 * (1 << 20))
    with pytest.raises(ResultsFormatError, match=r"/dev/zero: results file is not a regular file and gave more than "):
        read_bytes(Path("/dev/zero"), "results")
    with pytest.raises(ResultsFormatError, match=r"/dev/zero: pytest-benchmark file is not a regular file"):
        import_pytest_benchmark(Path("/dev/zero"))


def test_compare_of_dev_zero_is_one_error_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonfile, "MAX_STREAM_BYTES", 5 * (1 << 20))
    res = CliRunner().invoke(app, ["compare", "/dev/zero", "/dev/zero"])
    assert res.exit_code == 2
    assert res.stderr.startswith("error: /dev/zero: results file is not a regular file"), res.stderr
