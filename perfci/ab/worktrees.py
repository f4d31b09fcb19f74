"""The worktrees `perfci ab` adds: each locked with a reason naming perfci and its process (`lock_reason`), so
that one whose process is gone (killed before it could clean up) is found and removed at the start of the next A/B
(`remove_stale_worktrees`). Worktrees perfci did not make are never touched.

The A/B's temporary folder (`ab_workdir`) is marked with the same reason: an A/B killed outright leaves it behind
(the perfci shim, the container launchers), and the next A/B on this host removes it once its process is gone and
nothing but those files is left in it (`remove_dead_workdirs`); one that still holds a worktree goes with that
worktree, at the next A/B of its repository."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil

from perfci.ab.git_commands import git, run_git
from perfci.errors import InfrastructureError

LOCK_REASON = re.compile(r"perfci ab pid (?P<pid>[0-9]+) on (?P<host>\S+)")
OWNER_FILE = "perfci-owner"  # in an A/B's temporary folder: its `lock_reason`
LAUNCHER = re.compile(r"(base|head)-(python|container\.json)")  # perfci/ab/containers.py's files, in `containers/`


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
    """Delete a dead perfci's temporary folder (`perfci-*`) when all it holds is perfci's own files."""
    if folder.name.startswith("perfci-") and _left_behind_only(folder):
        shutil.rmtree(folder, ignore_errors=True)


def _left_behind_only(folder: Path) -> bool:
    """Whether `folder` holds nothing but what an A/B leaves once its worktrees are gone: the shim
    (`installed_perfci_shim`: a `perfci` link), the container launchers and the owner file."""
    try:
        names = {p.name for p in folder.iterdir()}
        shim = all(p.name == "perfci" and p.is_symlink() for p in (folder / "shim").glob("*"))
        launchers = all(LAUNCHER.fullmatch(p.name) and p.is_file() for p in (folder / "containers").glob("*"))
    except OSError:
        return False
    return names <= {"shim", "containers", OWNER_FILE} and shim and launchers


def remove_dead_workdirs(root: Path) -> list[Path]:
    """Remove the A/B temporary folders under `root` (`perfci-*`, marked by `ab_workdir`) whose perfci on this
    host is gone and that hold nothing but its own files; returns those removed."""
    removed = []
    for folder in sorted(root.glob("perfci-*")):
        try:
            owner = LOCK_REASON.fullmatch((folder / OWNER_FILE).read_text(encoding="utf-8").strip())
        except (OSError, UnicodeDecodeError):
            continue  # not an A/B's folder, or another user's
        if owner is None or owner["host"] != socket.gethostname() or _alive(int(owner["pid"])):
            continue
        if _left_behind_only(folder):
            shutil.rmtree(folder, ignore_errors=True)
            if not folder.exists():
                removed.append(folder)
    return removed


@contextlib.contextmanager
def ab_workdir(root: Path | None = None) -> Iterator[Path]:
    """The A/B's temporary folder under `root` (the system's by default), marked with its owner and removed on
    exit; the folders earlier A/Bs killed outright left there are removed first (`remove_dead_workdirs`)."""
    where = Path(tempfile.gettempdir()) if root is None else root
    remove_dead_workdirs(where)
    with tempfile.TemporaryDirectory(prefix="perfci-", dir=where) as tmp:
        (Path(tmp) / OWNER_FILE).write_text(lock_reason() + "\n", encoding="utf-8")
        yield Path(tmp)


# Submodules.
