"""`perfci ab` and `perfci ci` say why they find no repository: no git, a repository git refuses, or none."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from perfci.ab.revisions import repo_root
from perfci.errors import UsageError


def test_no_git_on_path_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(UsageError, match="git is not on PATH"):
        repo_root(tmp_path)


def test_no_repository_is_said(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not inside a git repository"):
        repo_root(tmp_path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs to hand the repository to another user")
def test_a_repository_of_another_user_is_said_with_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a CI container the checkout is often another user's: git says "dubious ownership", perfci said "not
    inside a git repository"."""
    repo = tmp_path / "theirs"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    os.chown(repo, 65534, 65534)
    for folder, _, files in os.walk(repo):
        for name in [folder, *(os.path.join(folder, f) for f in files)]:
            os.chown(name, 65534, 65534)
    (tmp_path / "home").mkdir()  # no safe.directory from the machine's own configuration
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with pytest.raises(UsageError, match="owned by another user") as refused:
        repo_root(repo)
    assert "safe.directory" in (refused.value.hint or "")
