"""The worktrees `perfci ab` adds: each locked with a reason naming perfci and its process (`lock_reason`), so
that one whose process is gone (killed before it could clean up) is found and removed at the start of the next A/B
(`remove_stale_worktrees`). Worktrees perfci did not make are never touched."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import socket
from pathlib import Path

import psutil

from perfci.ab.git_commands import git, run_git
from perfci.errors import InfrastructureError

LOCK_REASON = re.compile(r"perfci ab pid (?P<pid>[0-9]+) on (?P<host>\S+)")


def lock_reason(pid: int | None = None) -> str:
    """What perfci writes as the lock reason of a worktree it adds: its process id and host. A later perfci on
    the same host removes the worktree once that process is gone (`remove_stale_worktrees`)."""
    return f"perfci ab pid {os.getpid() if pid is None else pid} on {socket.gethostname()}"


@functools.cache
def _add_takes_reason(repo: Path) -> bool:
    """Whether this git's `worktree add` takes `--lock --reason` (git 2.36 on); `worktree lock --reason` is older."""
    usage = run_git(repo, "worktree", "add", "-h")
    return "--reason" in usage.stdout + usage.stderr


def add_worktree(repo: Path, path: Path, commit: str, reason: str | None = None) -> None:
    """`git worktree add --detach`, locked with `reason` (default: `lock_reason()`) as it is made, so that a
    perfci killed at any point leaves a worktree the next one recognises as its own."""
    why = lock_reason() if reason is None else reason
    if _add_takes_reason(repo):
        git(repo, "worktree", "add", "--detach", "--lock", "--reason", why, str(path), commit)
        return
    git(repo, "worktree", "add", "--detach", str(path), commit)
    git(repo, "worktree", "lock", "--reason", why, str(path))


def remove_worktree(repo: Path, path: Path) -> None:
    """Unlock and remove a worktree perfci added; where git cannot remove it, its folder is deleted (and the next
    `git worktree prune` forgets it)."""
    with contextlib.suppress(InfrastructureError):
        git(repo, "worktree", "unlock", str(path))
    try:
        git(repo, "worktree", "remove", "--force", str(path))
    except InfrastructureError:
        shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, killed but not yet reaped, does not)."""
    try:
        status: str = psutil.Process(pid).status()
    except psutil.NoSuchProcess:
        return False
    except (psutil.Error, OverflowError, ValueError):  # another user's process, or no pid perfci could have had
        return True
    return bool(status != psutil.STATUS_ZOMBIE)


def stale_worktrees(repo: Path) -> list[Path]:
    """The worktrees of `repo` locked by a perfci on this host whose process no longer runs."""
    try:
        listing = git(repo, "worktree", "list", "--porcelain")
    except InfrastructureError:
        return []
    stale: list[Path] = []
    path: Path | None = None
    for line in listing.splitlines():
        if line.startswith("worktree "):
            path = Path(line.removeprefix("worktree "))
        elif line.startswith("locked ") and path is not None:
            match = LOCK_REASON.fullmatch(line.removeprefix("locked ").strip())
            if match and match["host"] == socket.gethostname() and not _alive(int(match["pid"])):
                stale.append(path)
    return stale


def remove_stale_worktrees(repo: Path) -> list[Path]:
    """Remove the worktrees an earlier perfci left behind (`stale_worktrees`: killed before it could remove them),
    and its temporary folder where nothing else is left in it; returns the worktrees removed."""
    stale = stale_worktrees(repo)
    for path in stale:
        remove_worktree(repo, path)
    if stale:
        with contextlib.suppress(InfrastructureError):
            git(repo, "worktree", "prune")
    for folder in {p.parent for p in stale}:
        _remove_left_workdir(folder)
    return stale


def _remove_left_workdir(folder: Path) -> None:
    """Delete a dead perfci's temporary folder (`perfci-*`) when all it holds is the shim (`installed_perfci_shim`)."""
    if not folder.name.startswith("perfci-") or not folder.is_dir():
        return
    with contextlib.suppress(OSError):
        if {p.name for p in folder.iterdir()} <= {"shim"} and all(
            p.name == "perfci" and p.is_symlink() for p in (folder / "shim").glob("*")
        ):
            shutil.rmtree(folder)


# Submodules.
