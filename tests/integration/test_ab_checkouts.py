"""`perfci ab`'s checkouts of git revisions (perfci/ab/revisions.py) in real git repositories: each side's results
record that side's commit, submodules are checked out at each revision, a shallow clone is named as the reason a
revision is missing, and worktrees that a killed perfci left behind are removed by the next A/B."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfci.ab.revisions import checked_out
from perfci.ab.worktrees import add_worktree, lock_reason
from perfci.engine.runner import Runner, RunSettings
from perfci.errors import InfrastructureError
from tests.git_repos import commit, git, new_repo

pytestmark = pytest.mark.integration
SERIAL = pytest.mark.serial  # on the tests that assert verdicts or time-outs of real measurements: run alone (README)

WORKLOAD = """
import perfci
from {package} import {module}

FAST = {{"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.03, "min_sample_s": 0.0005}}


@perfci.workload(timing=FAST)
def loop(ctx):
    k = {module}.K

    def f():
        s = 0
        for i in range(k):
            s += i
        return s

    return f
"""


def perfci(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfci", *args], cwd=repo, capture_output=True, text=True, timeout=240
    )


def worktrees(repo: Path) -> set[Path]:
    listing = git(repo, "worktree", "list", "--porcelain").splitlines()
    return {Path(line.removeprefix("worktree ")).resolve() for line in listing if line.startswith("worktree ")}


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@contextlib.contextmanager
def zombie_pid() -> Iterator[int]:
    """A process that has exited and is not reaped yet (as a perfci killed a moment ago can be)."""
    proc = subprocess.Popen(["true"])
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # it has exited; still not reaped
    try:
        yield proc.pid
    finally:
        proc.wait()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Two commits of a project whose workload imports the project's own `helper.K` (3x bigger at HEAD)."""
    repo = new_repo(tmp_path / "proj")
    (repo / "perf").mkdir()
    (repo / "perf" / "wl.py").write_text(WORKLOAD.format(package="helpers", module="helper"))
    (repo / "helpers").mkdir()
    (repo / "helpers" / "helper.py").write_text("K = 3000\n")
    commit(repo, {}, "v1")
    (repo / "helpers" / "helper.py").write_text("K = 9000\n")
    commit(repo, {}, "v2")
    return repo


# 1. Each side's results record its own git state.


@SERIAL
def test_each_sides_results_record_that_sides_commit(repo: Path) -> None:
    """Before: both results files held the git state of the folder perfci was started in (HEAD, dirty)."""
    base, head = git(repo, "rev-parse", "HEAD~1"), git(repo, "rev-parse", "HEAD")
    (repo / "notes.txt").write_text("tracked\n")
    commit(repo, {}, "v3: no code change")  # the checkout perfci runs in is at v3; the sides are v1 and v2
    (repo / "notes.txt").write_text("an uncommitted edit in the checkout perfci runs in\n")
    out = repo / "out"
    args = ("ab", "HEAD~2", "HEAD~1", "--path", "perf", "--pairs", "4", "--looks", "1", "--out", str(out))
    proc = perfci(repo, *args)
    # helper.K: 3x the work at the head side. 4 pairs: with 2 the interval has one degree of freedom, and on a
    # loaded CI machine a 3x change came out inconclusive (-8.6% .. +864%).
    assert proc.returncode == 1, proc.stdout + proc.stderr
    recorded = {side: json.loads((out / side / "results.json").read_text())["git"] for side in ("base", "head")}
    assert recorded["base"]["commit"] == base and recorded["head"]["commit"] == head
    assert recorded["base"]["dirty"] is False and recorded["head"]["dirty"] is False  # clean worktrees


def test_a_runner_records_the_git_state_of_its_git_root(repo: Path, tmp_path: Path) -> None:
    (repo / "helpers" / "helper.py").write_text("K = 1\n")  # the working tree is dirty
    with checked_out(repo, "base", "HEAD~1", tmp_path / "work", {}) as side:
        assert side.commit is not None
        base = Runner(RunSettings(peaks_cache=None), tmp_path / "base", git_root=side.root)
        base.start([])
        assert base.finish().git is not None
        recorded = json.loads((tmp_path / "base" / "results.json").read_text())["git"]
        assert recorded["commit"] == side.commit and recorded["dirty"] is False
    head = Runner(RunSettings(peaks_cache=None), tmp_path / "head", git_root=repo)
    head.start([])
    head.finish()
    recorded = json.loads((tmp_path / "head" / "results.json").read_text())["git"]
    assert recorded["commit"] == git(repo, "rev-parse", "HEAD") and recorded["dirty"] is True


# 2. Submodules.


@pytest.fixture
def with_submodule(tmp_path: Path) -> Path:
    """A project whose workload imports `vendor/lib.py` from a submodule (a local repository), which itself has
    a submodule `vendor/deep`. The submodule's K is 3000 at HEAD~1 and 9000 at HEAD; the project's own files
    do not change."""
    deep = new_repo(tmp_path / "deep")
    (deep / "deep.py").write_text("D = 1\n")
    commit(deep, {}, "d1")
    lib = new_repo(tmp_path / "lib")
    git(lib, "submodule", "add", "-q", "../deep", "deep")
    (lib / "lib.py").write_text("K = 3000\n")
    old = commit(lib, {}, "s1")
    (lib / "lib.py").write_text("K = 9000\n")
    commit(lib, {}, "s2")
    repo = new_repo(tmp_path / "proj")
    (repo / "perf").mkdir()
    (repo / "perf" / "wl.py").write_text(WORKLOAD.format(package="vendor", module="lib"))
    git(repo, "submodule", "add", "-q", "../lib", "vendor")
    git(repo, "submodule", "update", "--init", "--recursive")
    git(repo / "vendor", "checkout", "-q", old)
    commit(repo, {}, "p1")
    git(repo / "vendor", "checkout", "-q", "HEAD@{1}")
    commit(repo, {}, "p2")
    return repo


@SERIAL
def test_a_regression_in_a_submodule_is_found(with_submodule: Path) -> None:
    """Before: the base worktree had an empty `vendor/`, its cases failed to import and became `new` (exit 0)."""
    out = with_submodule / "out"
    proc = perfci(with_submodule, "ab", "HEAD~1", "--path", "perf", "--pairs", "4", "--looks", "1", "--out", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = json.loads((out / "comparison.json").read_text())["rows"]
    row = next(r for r in rows if r["case_id"] == "wl.loop@cpu" and r["metric"] == "latency.median")
    assert row["verdict"] == "regression" and row["ratio"] > 2.0
    assert worktrees(with_submodule) == {with_submodule.resolve()}  # the worktree with submodules is removed


def test_submodules_come_from_this_checkouts_copy(with_submodule: Path, tmp_path: Path) -> None:
    """The submodules' own repositories are gone: the worktree's are cloned from the checkout's copies."""
    config = (with_submodule / ".git" / "config").read_text()
    for gone in ("lib", "deep"):
        subprocess.run(["rm", "-rf", str(tmp_path / gone)], check=True)
    with checked_out(with_submodule, "base", "HEAD~1", tmp_path / "work", {}) as side:
        assert (side.root / "vendor" / "lib.py").read_text() == "K = 3000\n"
        assert (side.root / "vendor" / "deep" / "deep.py").read_text() == "D = 1\n"
        assert git(side.root, "status", "--porcelain", "--untracked-files=no") == ""
    assert not side.root.exists() and worktrees(with_submodule) == {with_submodule.resolve()}
    assert (with_submodule / ".git" / "config").read_text() == config  # nothing written into the user's config


def test_a_deinitialised_submodule_comes_from_the_copy_git_keeps(with_submodule: Path, tmp_path: Path) -> None:
    """`git submodule deinit` empties `vendor/` but keeps `.git/modules/vendor`: that copy is used by name."""
    git(with_submodule, "submodule", "deinit", "-q", "-f", "vendor")
    subprocess.run(["rm", "-rf", str(tmp_path / "lib")], check=True)
    with checked_out(with_submodule, "base", "HEAD~1", tmp_path / "work", {}) as side:
        assert (side.root / "vendor" / "lib.py").read_text() == "K = 3000\n"
        assert (side.root / "vendor" / "deep" / "deep.py").read_text() == "D = 1\n"  # from its URL


def test_submodules_not_here_are_cloned_from_their_urls(with_submodule: Path, tmp_path: Path) -> None:
    """A clone without its submodules initialised: `../lib` is resolved against its origin, as git does, and
    the nested `../deep` against lib's URL."""
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(with_submodule), str(clone))
    assert not (clone / "vendor" / "lib.py").exists()
    config = (clone / ".git" / "config").read_text()
    with checked_out(clone, "base", "HEAD~1", tmp_path / "work", {}) as side:
        assert (side.root / "vendor" / "lib.py").read_text() == "K = 3000\n"
        assert (side.root / "vendor" / "deep" / "deep.py").read_text() == "D = 1\n"
    assert (clone / ".git" / "config").read_text() == config
    assert worktrees(clone) == {clone.resolve()}


def test_a_submodule_that_cannot_be_checked_out_stops_the_ab(with_submodule: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(with_submodule), str(clone))
    subprocess.run(["rm", "-rf", str(tmp_path / "lib")], check=True)  # neither here nor at its URL
    proc = perfci(clone, "ab", "HEAD~1", "--path", "perf", "--out", str(clone / "out"))
    assert proc.returncode == InfrastructureError.exit_code, proc.stdout + proc.stderr
    assert "cannot check out submodule 'vendor'" in proc.stderr and str(tmp_path / "lib") in proc.stderr
    assert "fatal:" in proc.stderr and "Traceback" not in proc.stderr
    assert worktrees(clone) == {clone.resolve()}


# 3. Shallow clones.


def test_a_revision_missing_from_a_shallow_clone_says_how_to_fetch_it(repo: Path, tmp_path: Path) -> None:
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))
    base = git(repo, "rev-parse", "HEAD~1")
    for args in (("ab", "HEAD~1"), ("ab", base), ("ci", "--base", base)):
        proc = perfci(shallow, *args, "--path", "perf", "--out", str(shallow / "out"))
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "shallow clone" in proc.stderr and "fetch-depth: 0" in proc.stderr
        assert "git fetch --unshallow" in proc.stderr and "Traceback" not in proc.stderr
    proc = perfci(repo, "ab", "no-such-branch", "--path", "perf")  # a full clone: no word of shallowness
    assert proc.returncode == 2 and "not a revision" in proc.stderr and "shallow" not in proc.stderr


# 4. Worktrees that a killed perfci left behind.


def test_stale_perfci_worktrees_are_removed_and_no_others(repo: Path, tmp_path: Path) -> None:
    """A perfci killed with SIGKILL leaves its locked worktrees (and its temporary folder) behind; the next A/B
    removes those whose process is gone (reaped or not), and leaves the user's worktrees and those of a perfci
    that still runs, here or on another host, alone."""
    commit_ = git(repo, "rev-parse", "HEAD~1")
    left = tmp_path / "perfci-killed"  # as api/ab.py's temporary folder: the shim and the two worktrees
    (left / "shim").mkdir(parents=True)
    (left / "shim" / "perfci").symlink_to(tmp_path, target_is_directory=True)
    dead = dead_pid()
    stale = [left / "base", left / "head"]
    for path in stale:
        add_worktree(repo, path, commit_, reason=lock_reason(dead))
    running = tmp_path / "perfci-running" / "base"  # a perfci that still runs (this process)
    add_worktree(repo, running, commit_, reason=lock_reason(os.getpid()))
    elsewhere = tmp_path / "perfci-elsewhere" / "base"  # another host's perfci (a shared file system)
    add_worktree(repo, elsewhere, commit_, reason=f"perfci ab pid {dead} on not-{socket.gethostname()}")
    mine, usb = tmp_path / "mine", tmp_path / "usb"
    git(repo, "worktree", "add", "-q", "--detach", str(mine), commit_)
    git(repo, "worktree", "add", "-q", "--detach", str(usb), commit_)
    git(repo, "worktree", "lock", "--reason", f"pid {dead}: on a removable disk", str(usb))
    kept = {p.resolve() for p in (repo, running, elsewhere, mine, usb)}

    with zombie_pid() as zombie:
        stale.append(tmp_path / "perfci-zombie" / "base")
        add_worktree(repo, stale[-1], commit_, reason=lock_reason(zombie))
        assert worktrees(repo) == kept | {p.resolve() for p in stale}
        with checked_out(repo, "base", "HEAD~1", tmp_path / "work", {}) as side:
            assert worktrees(repo) == kept | {side.root.resolve()}
            assert not any(p.exists() for p in stale) and not left.exists()  # its folder held nothing else
            porcelain = git(repo, "worktree", "list", "--porcelain")
            assert f"locked {lock_reason()}" in porcelain  # this A/B's own worktree, recognisable if it is killed
    assert worktrees(repo) == kept
    assert all(p.is_dir() for p in (running, elsewhere, mine, usb))
