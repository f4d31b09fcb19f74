"""An A/B killed outright (SIGKILL) leaves its temporary folder behind: the perfci shim and, for an A/B of two
images, the container launchers. The next A/B on the host removes those whose perfci is gone and that hold
nothing else; folders of a perfci still running, of another host, or holding anything else are left alone."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

from perfci.ab.worktrees import OWNER_FILE, ab_workdir, lock_reason, remove_dead_workdirs


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def left_by(root: Path, name: str, reason: str | None, launchers: tuple[str, ...] = ("base-python",)) -> Path:
    """A folder as `ab_workdir` and a killed A/B of two images leave it: owner file, shim link, launchers."""
    folder = root / name
    (folder / "shim").mkdir(parents=True)
    (folder / "shim" / "perfci").symlink_to(root, target_is_directory=True)
    (folder / "containers").mkdir()
    for launcher in launchers:
        (folder / "containers" / launcher).write_text("#!/bin/sh\n")
    if reason is not None:
        (folder / OWNER_FILE).write_text(reason + "\n")
    return folder


def test_dead_owners_folders_holding_only_perfci_files_are_removed_and_no_others(tmp_path: Path) -> None:
    dead = dead_pid()
    gone = left_by(tmp_path, "perfci-killed", lock_reason(dead), ("base-python", "head-container.json"))
    kept = [
        left_by(tmp_path, "perfci-running", lock_reason(os.getpid())),  # this process: still running
        left_by(tmp_path, "perfci-elsewhere", f"perfci ab pid {dead} on not-{socket.gethostname()}"),
        left_by(tmp_path, "perfci-unmarked", None),  # no owner file: not known to be an A/B's folder
        left_by(tmp_path, "perfci-odd-launcher", lock_reason(dead), ("notes.txt",)),
        left_by(tmp_path, "other-prefix", lock_reason(dead)),
    ]
    with_worktree = left_by(tmp_path, "perfci-with-worktree", lock_reason(dead))
    (with_worktree / "base").mkdir()  # a worktree goes with the next A/B of its repository (stale_worktrees)
    kept.append(with_worktree)
    garbled = left_by(tmp_path, "perfci-garbled", None)
    (garbled / OWNER_FILE).write_bytes(b"\xff\xfe not text")
    kept.append(garbled)

    assert remove_dead_workdirs(tmp_path) == [gone]
    assert not gone.exists()
    assert all(folder.exists() for folder in kept)


def test_an_ab_workdir_is_marked_removed_on_exit_and_clears_dead_ones_first(tmp_path: Path) -> None:
    gone = left_by(tmp_path, "perfci-killed", lock_reason(dead_pid()))
    with ab_workdir(tmp_path) as work:
        assert not gone.exists()
        assert work.parent == tmp_path and work.name.startswith("perfci-")
        assert (work / OWNER_FILE).read_text().strip() == lock_reason()
        assert remove_dead_workdirs(tmp_path) == []  # its own owner is alive
    assert not work.exists()
