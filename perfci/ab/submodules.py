"""A revision's submodules in its `perfci ab` worktree (`init_submodules`), cloned from this checkout's own copy
of each where it holds the commit, else from the submodule's URL, so that a submodule's code is the revision's on
both sides (without them a regression in a submodule passed: the base side failed to import, its rows `new`)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from perfci.ab.git_commands import git, run_git
from perfci.errors import InfrastructureError

SUBMODULE_TIMEOUT_S = 1800.0  # a submodule that is not here is cloned over the network
GITLINK_MODE = "160000"


@dataclass(frozen=True)
class Submodule:
    name: str
    path: str  # relative to the checkout that declares it
    url: str  # as .gitmodules writes it (may be relative to the superproject's remote)
    commit: str  # the gitlink at the checked-out revision
    update: str | None = None  # `update = none`: the project leaves it out


def submodules(checkout: Path) -> list[Submodule]:
    """The submodules the checkout's `.gitmodules` declares that are gitlinks at its checked-out commit."""
    if not (checkout / ".gitmodules").is_file():
        return []
    try:
        listing = git(checkout, "config", "--null", "--file", ".gitmodules", "--list")
    except InfrastructureError as exc:
        raise InfrastructureError(f"{checkout / '.gitmodules'} cannot be read: {exc}") from None
    keys: dict[tuple[str, str], str] = {}
    for entry in listing.split("\0"):
        key, _, value = entry.partition("\n")
        name, _, var = key.removeprefix("submodule.").rpartition(".")
        if key.startswith("submodule.") and name:
            keys[(name, var)] = value
    links: dict[str, str] = {}
    for entry in git(checkout, "ls-files", "--stage", "-z").split("\0"):
        meta, _, file = entry.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[0] == GITLINK_MODE:
            links[file] = fields[1]
    return [
        Submodule(name, path, keys.get((name, "url"), ""), links[path], keys.get((name, "update")))
        for (name, var), path in keys.items()
        if var == "path" and path in links
    ]


def init_submodules(repo: Path, checkout: Path, remote: str, rev: str) -> None:
    """Check the submodules of `checkout` (a worktree of `repo`, or a submodule in one) out at its commit,
    recursively. Each is cloned from `repo`'s own clone of it where that holds the commit (no network, no
    copies: a local clone hard-links), else from its URL (a relative one resolved against `remote`, as git
    does). Nothing is written into `repo`'s configuration: the URL is given on the command line. A submodule
    that cannot be checked out stops the A/B, naming it and git's message."""
    for sub in submodules(checkout):
        if "none" in (sub.update, _config(repo, f"submodule.{sub.name}.update")):
            continue  # the project's choice: git leaves it out too
        upstream = _config(repo, f"submodule.{sub.name}.url") or absolute_url(sub.url, remote)
        source = _local_clone(repo, sub) or upstream
        # the side's own code runs in the A/B anyway, so a local submodule URL exposes nothing new
        args = ["-c", "protocol.file.allow=always", "-c", f"submodule.{sub.name}.url={source}"]
        args += ["-c", f"submodule.{sub.name}.active=true", "submodule", "update", "--", sub.path]
        out = run_git(checkout, *args, timeout_s=SUBMODULE_TIMEOUT_S)
        if out.returncode != 0 or not (checkout / sub.path / ".git").exists():
            raise InfrastructureError(
                f"cannot check out submodule {sub.path!r} ({upstream}) of {rev}: {_git_message(out)}",
                hint=f"perfci clones it from this checkout's copy where that holds commit {sub.commit[:12]}, else "
                "from its URL: fetch it here (`git submodule update --init --recursive`) or make its URL reachable",
            )
        init_submodules(repo / sub.path, checkout / sub.path, upstream, rev)


def _git_message(out: subprocess.CompletedProcess[str]) -> str:
    lines = [ln.strip() for ln in out.stderr.splitlines() if ln.strip()]
    fatal = next((ln for ln in lines if ln.startswith(("fatal:", "error:"))), None)
    return fatal or (lines[-1] if lines else f"exit code {out.returncode}")


def _config(repo: Path, key: str) -> str | None:
    """`key` in the configuration of the checkout at `repo` (None where `repo` is not a checkout of its own)."""
    if not (repo / ".git").exists():
        return None
    out = run_git(repo, "config", "--get", key)
    value = out.stdout.strip() if out.returncode == 0 else ""
    return value or None


def remote_url(repo: Path) -> str:
    """What git resolves a relative submodule URL against in a detached worktree: `origin`'s URL, else the
    repository itself (git would take the worktree's folder, where a `../sub` is not)."""
    return _config(repo, "remote.origin.url") or str(repo)


def _local_clone(repo: Path, sub: Submodule) -> Path | None:
    """The git folder of `repo`'s own clone of the submodule, where it holds the commit: the one checked out at
    its path, else the one git keeps by name (`.git/modules/<name>`: a submodule moved or deinitialised)."""
    candidates: list[Path] = []
    for folder, suffix in ((repo / sub.path, ""), (repo, f"modules/{sub.name}")):
        if (folder / ".git").exists():
            out = run_git(folder, "rev-parse", "--absolute-git-dir")
            if out.returncode == 0:
                candidates.append(Path(out.stdout.strip()) / suffix)
    for gitdir in candidates:
        if gitdir.is_dir() and run_git(gitdir, "cat-file", "-e", f"{sub.commit}^{{commit}}").returncode == 0:
            return gitdir
    return None


def absolute_url(url: str, remote: str) -> str:
    """A submodule URL resolved the way git resolves one relative to the superproject's remote (`./x`, `../x`;
    git's relative_url): each `../` takes one component off the remote, at a `/` or else at a `:` (`host:repo`)."""
    if not url.startswith(("./", "../")):
        return url
    base, sep = remote.rstrip("/"), "/"
    while True:
        if url.startswith("../"):
            url = url[3:]
            cut = base.rfind("/")
            if cut < 0:
                cut, sep = base.rfind(":"), ":"
            base = base[:cut] if cut >= 0 else "."
        elif url.startswith("./"):
            url = url[2:]
        else:
            break
    return f"{base}{sep}{url}"
