"""Throw-away git repositories for the A/B tests: `git` in a folder (its output, stripped), a new repository with
an author set, and a commit of files given as text."""

from __future__ import annotations

import subprocess
from pathlib import Path

# submodules from local paths (git refuses them by default): every call may clone one
ALLOW_FILE = ("-c", "protocol.file.allow=always")


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", *ALLOW_FILE, *args], cwd=repo, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def new_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    git(path, "config", "user.email", "t@t")
    git(path, "config", "user.name", "t")
    return path


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    """Write `files` (path -> text), commit everything, return the commit."""
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")
