"""git for `perfci ab`: one command in a repository, never waiting on a prompt, its failure one InfrastructureError."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from perfci.errors import InfrastructureError

GIT_TIMEOUT_S = 120.0


def run_git(repo: Path, *args: str, timeout_s: float = GIT_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """git in `repo`, never waiting on a prompt (a submodule URL that asks for a password fails at once)."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        return subprocess.run(
            ["git", *args],
            cwd=repo,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise InfrastructureError(f"git {' '.join(args)} failed: {exc}.") from None


def git(repo: Path, *args: str) -> str:
    out = run_git(repo, *args)
    if out.returncode != 0:
        message = (out.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise InfrastructureError(f"git {' '.join(args)} failed: {message}")
    return out.stdout.strip()
