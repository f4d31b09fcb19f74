"""Revisions for `perfci ab`: check a git revision out in a worktree, build it, make its code importable.

Each side of an A/B is a `Side`: a revision checked out with `git worktree add --detach` into a temporary folder
(or the working tree itself, as it is, for the head side when no head revision is named). A worker for that side
gets an environment where
- `PYTHONPATH` = [a shim folder holding only `perfci` -> the *installed* perfci], then the side's source roots
  (`<root>/src` when it exists, then `<root>`), then whatever PYTHONPATH was;
- `PYTHONSAFEPATH=1`, so the worker's current folder (the user's checkout) is not put first on `sys.path`.
So the revision's own modules are what workloads import, while perfci itself (the worker protocol, timing) is
the installed one on both sides. Workload files are loaded by path from the side's root.
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
from perfci.errors import InfrastructureError, UsageError

GIT_TIMEOUT_S = 120.0


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


def git(repo: Path, *args: str) -> str:
    try:
        out = subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise InfrastructureError(f"git {' '.join(args)} failed: {exc}.") from None
    if out.returncode != 0:
        message = (out.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise InfrastructureError(f"git {' '.join(args)} failed: {message}")
    return out.stdout.strip()


def repo_root(start: Path) -> Path:
    try:
        return Path(git(start, "rev-parse", "--show-toplevel"))
    except InfrastructureError:
        raise UsageError(f"{start}: not inside a git repository.", hint="run `perfci ab` in a git checkout") from None


def resolve(repo: Path, rev: str) -> str:
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except InfrastructureError:
        hint = "name a commit, branch or tag"
        if Path(rev).exists() or (repo / rev).exists():
            hint = f"{rev!r} is a path: give workload paths after `--` (perfci ab BASE -- {rev}) or with --path"
        raise UsageError(f"{rev!r} is not a revision of this repository.", hint=hint) from None


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
    """The side for `rev` (a temporary worktree, removed on exit) or, with rev None, the working tree. `length`:
    the path length the worktree should have (the working tree's, when the other side runs there)."""
    shim = installed_perfci_shim(workdir / "shim")
    if rev is None:
        yield Side(name, "working tree", None, repo, side_env(repo, shim, base_env))
        return
    commit = resolve(repo, rev)
    path = worktree_path(workdir, name, length)
    if path.exists():
        shutil.rmtree(path)
    git(repo, "worktree", "add", "--detach", str(path), commit)
    try:
        yield Side(name, rev, commit, path, side_env(path, shim, base_env))
    finally:
        with contextlib.suppress(InfrastructureError):
            git(repo, "worktree", "remove", "--force", str(path))
        with contextlib.suppress(InfrastructureError):
            git(repo, "worktree", "prune")


def map_path(path: Path, repo: Path, root: Path) -> Path:
    """The same file in the checkout at `root` (paths outside the repository are used as they are)."""
    absolute = path.resolve()
    try:
        rel = absolute.relative_to(repo.resolve())
    except ValueError:
        return absolute
    return root / rel
