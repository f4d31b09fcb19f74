"""Every results, comparison and baseline file is written through `write_atomic`: whole or not at all, never over
a folder or a device, with no temporary file left behind."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from perfci.format import jsonfile
from perfci.format.jsonfile import write_atomic


def test_written_whole_with_the_usual_permissions_and_nothing_beside_it(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "results.json"
    write_atomic(target, b"{}")
    write_atomic(target, b'{"a": 1}')
    assert target.read_bytes() == b'{"a": 1}'
    assert [p.name for p in target.parent.iterdir()] == ["results.json"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~jsonfile._UMASK


def test_a_folder_is_refused_naming_it_and_a_pipe_is_written_into_not_replaced(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    with pytest.raises(IsADirectoryError) as refused:
        write_atomic(folder, b"{}")
    assert refused.value.filename == str(folder) and "is a folder" in str(refused.value.strerror)
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(pipe.read_bytes()))
    reader.start()
    write_atomic(pipe, b"{}")  # `--out /dev/stdout`: written into
    reader.join(10)
    assert got == [b"{}"] and stat.S_ISFIFO(pipe.stat().st_mode)  # not replaced by a file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "pipe"]
    if Path("/dev/full").exists():  # a full device: its error, and the device left as it is
        with pytest.raises(OSError, match="No space left"):
            write_atomic(Path("/dev/full"), b"{}")
        assert stat.S_ISCHR(Path("/dev/full").stat().st_mode)


def test_a_failed_write_leaves_no_temporary_file_and_the_old_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "results.json"
    target.write_bytes(b"old")

    def full(fd: int, mode: str) -> object:
        os.close(fd)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(jsonfile.os, "fdopen", full)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_an_unwritable_folder_is_named_by_the_file_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(**kwargs: object) -> tuple[int, str]:
        raise PermissionError(13, "Permission denied", str(tmp_path / ".results.json.x.tmp"))

    monkeypatch.setattr(jsonfile.tempfile, "mkstemp", refuse)
    with pytest.raises(PermissionError) as refused:
        write_atomic(tmp_path / "results.json", b"{}")
    assert refused.value.filename == str(tmp_path / "results.json")


def test_a_link_writes_the_file_it_points_to_and_a_file_in_the_way_is_named(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_bytes(b"old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomic(link, b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"  # the link was replaced by a file
    (tmp_path / "afile").write_text("x")
    with pytest.raises(NotADirectoryError) as refused:
        write_atomic(tmp_path / "afile" / "x.json", b"{}")
    assert refused.value.filename == str(tmp_path / "afile" / "x.json")
    if Path("/dev/full").exists():
        full = tmp_path / "full.json"
        full.symlink_to("/dev/full")
        with pytest.raises(OSError) as no_space:
            write_atomic(full, b"{}")
        assert no_space.value.filename == "/dev/full"
