"""Revisions for `perfci ab`: check a git revision out in a worktree, build it, make its code importable.

Each side of an A/B is a `Side`: a revision checked out with `git worktree add --detach` into a temporary folder
(or the working tree itself, as it is, for the head side when no head revision is named). A worker for that side
gets an environment where
- `PYTHONPATH` = [a shim folder holding only `perfci` -> the *installed* perfci], then the side's source roots
  (`<root>/src` when it exists, then `<root>`), then whatever PYTHONPATH was;
- `PYTHONSAFEPATH=1`, so the worker's current folder (the user's checkout) is not put first on `sys.path`.
So the revision's own modules are what workloads import, while perfci itself (the worker protocol, timing) is
the installed one on both sides. Workload files are loaded by path from the side's root.

A worktree gets the revision's submodules too (`init_submodules`), cloned from this checkout's own copy of each
where it holds the commit, so that a submodule's code is the revision's on both sides. perfci locks each worktree
it adds with a reason naming it and its process (`lock_reason`); one whose process is gone (killed before it could
clean up) is removed at the start of the next A/B (`remove_stale_worktrees`). Worktrees perfci did not make are
never touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import perfci
from perfci.ab.environments import Environment
from perfci.ab.git_commands import git
from perfci.ab.submodules import init_submodules, remote_url
from perfci.ab.worktrees import add_worktree, remove_stale_worktrees, remove_worktree
from perfci.errors import InfrastructureError, UsageError

FULL_HISTORY_HINT = (
    "fetch the whole history: in GitHub Actions, actions/checkout with `fetch-depth: 0`; "
    "locally, `git fetch --unshallow`"
)


@dataclass(frozen=True)
class Side:
    name: str  # "base" | "head"
    rev: str  # as the user named it ("HEAD~1", "main", "working tree")
    commit: str | None  # resolved commit; None for the working tree
    root: Path  # folder with the revision's files
    env: dict[str, str] = field(default_factory=dict)
    environment: Environment | None = None  # the interpreter its workers run (`--base-python`/`--head-python`)

    @property
    def python(self) -> str | None:
        return self.environment.python if self.environment is not None else None

    @property
    def label(self) -> str:
        rev = f"{self.rev} ({self.commit[:12]})" if self.commit else self.rev
        return f"{rev} in {self.environment.label}" if self.environment is not None else rev


def repo_root(start: Path) -> Path:
    """The repository's top folder; a UsageError that says why there is none: no git on PATH, a repository git
    will not use (another user's: "dubious ownership"), or none at all (all three read "not inside a git
    repository")."""
    try:
        return Path(git(start, "rev-parse", "--show-toplevel"))
    except InfrastructureError as exc:
        said = str(exc)
        if "No such file or directory" in said and "'git'" in said:
            raise UsageError("git is not on PATH; perfci ab and ci need it.", hint="install git") from None
        if "dubious ownership" in said or "safe.directory" in said:
            raise UsageError(
                f"{start}: git refuses this repository, owned by another user ({said.split(': ', 1)[-1]}).",
                hint=f"git config --global --add safe.directory {start}",
            ) from None
        raise UsageError(f"{start}: not inside a git repository.", hint="run `perfci ab` in a git checkout") from None


def resolve(repo: Path, rev: str) -> str:
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except InfrastructureError:
        pass
    if Path(rev).exists() or (repo / rev).exists():
        hint = f"{rev!r} is a path: give workload paths after `--` (perfci ab BASE -- {rev}) or with --path"
        raise UsageError(f"{rev!r} is not a revision of this repository.", hint=hint)
    if is_shallow(repo):  # `git clone --depth 1`, actions/checkout's default: the base is usually not fetched
        raise UsageError(
            f"{rev!r} is not a revision of this repository, which is a shallow clone: it holds only the latest "
            "commits, so older commits and other branches are not here.",
            hint=FULL_HISTORY_HINT,
        )
    raise UsageError(f"{rev!r} is not a revision of this repository.", hint="name a commit, branch or tag")


def is_shallow(repo: Path) -> bool:
    """Whether the repository is a shallow clone (`git clone --depth N`, actions/checkout's default)."""
    with contextlib.suppress(InfrastructureError):
        return git(repo, "rev-parse", "--is-shallow-repository") == "true"
    return False


def source_roots(root: Path) -> list[Path]:
    return [p for p in (root / "src", root) if p.is_dir()]


def installed_perfci_shim(folder: Path) -> Path:
    """A folder whose only entry is `perfci` -> the installed perfci package (see the module docstring)."""
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "perfci"
    if not link.exists():
        link.symlink_to(Path(perfci.__file__).resolve().parent, target_is_directory=True)
    return folder


def side_env(root: Path, shim: Path, base_env: dict[str, str]) -> dict[str, str]:
    env = dict(base_env)
    parts = [str(shim), *(str(p) for p in source_roots(root))]
    if env.get("PYTHONPATH"):
        parts.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env["PYTHONSAFEPATH"] = "1"
    return env


def build(side: Side, command: str, log: Path, timeout_s: float = 1800.0) -> None:
    """Run the build command in the side's root (shell), log to `log`; a failure is an InfrastructureError."""
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**side.env, "PERFCI_AB_SIDE": side.name, "PERFCI_AB_ROOT": str(side.root)}
    with open(log, "wb") as fh:
        try:
            proc = subprocess.run(
                command, shell=True, cwd=side.root, env=env, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout_s
            )
        except subprocess.TimeoutExpired:
            raise InfrastructureError(f"build of {side.label} timed out after {timeout_s:g} s (log: {log}).") from None
    if proc.returncode != 0:
        raise InfrastructureError(
            f"build command failed for {side.label} with exit code {proc.returncode}.", hint=f"see {log}"
        )


def worktree_path(workdir: Path, name: str, length: int | None) -> Path:
    """Where a side's worktree goes: `workdir/<name>`, its name padded so that the path is `length` characters
    long (the other side's), where it is shorter. Both sides then run from paths of one length: the path is in
    every frame's `__file__`, `sys.path` and the environment, and a layout that favours one length would favour
    one side on every pull request (docs/measurement.md, "Layout"). The name is short so that only a working
    tree shorter than `workdir/base` (about 25 characters under /tmp) keeps a difference."""
    path = workdir / name
    if length is not None and len(str(path)) < length:
        path = workdir / (f"{name}-" + "x" * (length - len(str(path)) - 1))
    return path


@contextlib.contextmanager
def checked_out(
    repo: Path, name: str, rev: str | None, workdir: Path, base_env: dict[str, str], length: int | None = None
) -> Iterator[Side]:
    """The side for `rev` (a temporary worktree with its submodules, removed on exit) or, with rev None, the
    working tree. `length`: the path length the worktree should have (the working tree's, when the other side
    runs there). The worktrees that an earlier perfci left behind are removed first."""
    remove_stale_worktrees(repo)
    shim = installed_perfci_shim(workdir / "shim")
    if rev is None:
        yield Side(name, "working tree", None, repo, side_env(repo, shim, base_env))
        return
    commit = resolve(repo, rev)
    path = worktree_path(workdir, name, length)
    if path.exists():
        shutil.rmtree(path)
    add_worktree(repo, path, commit)
    try:
        init_submodules(repo, path, remote_url(repo), rev)
        yield Side(name, rev, commit, path, side_env(path, shim, base_env))
    finally:
        remove_worktree(repo, path)
        with contextlib.suppress(InfrastructureError):
            git(repo, "worktree", "prune")


# Worktrees perfci added, and which of them are stale.


def map_path(path: Path, repo: Path, root: Path) -> Path:
    """The same file in the checkout at `root` (paths outside the repository are used as they are)."""
    absolute = path.resolve()
    try:
        rel = absolute.relative_to(repo.resolve())
    except ValueError:
        return absolute
    return root / rel
