"""Output folders: each command started without --out gets its own, and two commands never write one at once."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from perfci import work_folder
from perfci.errors import UsageError
from perfci.work_folder import IGNORE_TEXT, new_output_folder, output_folder_lock


class _OneSecond:
    """`datetime` whose now() is always the same second."""

    @staticmethod
    def now(tz: object = None) -> datetime:
        return datetime(2026, 12, 6, 12, 0, 0, tzinfo=UTC)


def test_commands_started_in_the_same_second_get_their_own_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two `perfci run` in one second both printed `.perfci/runs/<second>/results.json`: one's results were gone."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(work_folder, "datetime", _OneSecond)
    folders = [new_output_folder("runs") for _ in range(3)]
    assert [f.as_posix() for f in folders] == [
        ".perfci/runs/20261206T120000Z",
        ".perfci/runs/20261206T120000Z-2",
        ".perfci/runs/20261206T120000Z-3",
    ]
    assert all(f.is_dir() for f in folders)
    assert (tmp_path / ".perfci" / ".gitignore").read_text() == IGNORE_TEXT


def test_a_folder_being_written_is_refused_to_a_second_command(tmp_path: Path) -> None:
    """Two runs given one --out: one's results replaced the other's, while both said they were written there."""
    out = tmp_path / "out"
    busy = pytest.raises(UsageError, match="another perfci command is writing there now")
    with output_folder_lock(out), busy, output_folder_lock(out):
        pass
    with output_folder_lock(out):  # released when the first command ended
        pass
