"""The files a pytest session of the plugin reads and writes: `--perfci-out`'s folder and results file, checked
before any test runs; the `--perfci-compare` baseline, read then too; the expected-changes file its comparison
applies.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

RESULTS_FILE = "results.json"


def readable_baseline(path: Path) -> None:
    """`--perfci-compare PATH` when it is a results file perfci can read; a usage error now otherwise (a missing,
    empty or corrupt baseline was reported only after every test had been measured)."""
    from perfci.errors import PerfciError
    from perfci.format.schema import load_results

    if path.is_dir():
        raise pytest.UsageError(f"--perfci-compare {path}: a folder, not a results file (its results.json?)")
    if not path.is_file():
        raise pytest.UsageError(f"--perfci-compare {path}: no such file")
    try:
        load_results(path)
    except PerfciError as exc:
        raise pytest.UsageError(f"--perfci-compare {path}: {exc}") from None


def baseline_tests(path: Path) -> set[str]:
    """The pytest test ids of a baseline's cases (`bench/test_b.py::test_x[1]`: the case id less its device)."""
    from perfci.format.schema import load_results

    return {c.id.rpartition("@")[0] or c.id for c in load_results(path).cases}


def checked_out(out: str, baseline: Path | None) -> Path:
    """`--perfci-out` resolved, when results.json can be written there and is not the baseline; a usage error
    otherwise (a file there ended the session in a traceback, and `--perfci-out base --perfci-compare
    base/results.json` overwrote the baseline and compared it with itself: PASS on a 3x slowdown)."""
    path = Path(out).resolve()
    existing = next(p for p in (path, *path.parents) if p.exists())  # the root exists
    if not existing.is_dir():
        raise pytest.UsageError(
            f"--perfci-out {out}: {existing} is a file, not a folder; --perfci-out names the folder that "
            f"{RESULTS_FILE} is written in"
        )
    results = path / RESULTS_FILE
    if results.is_dir():
        raise pytest.UsageError(f"--perfci-out {out}: {results} is a folder, so the results file cannot be written")
    if baseline is not None and (baseline == results or _same_file(baseline, results)):
        raise pytest.UsageError(
            f"--perfci-compare {baseline} is the {RESULTS_FILE} that --perfci-out {out} writes: the run would "
            "overwrite its baseline and compare it with itself; give --perfci-out another folder"
        )
    return path


def _same_file(a: Path, b: Path) -> bool:
    """Whether `a` and `b` are one existing file (a hard link, a case-insensitive file system)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def expected_file(rootpath: Path, cwd: Path | None = None) -> Path | None:
    """The expected-changes file a session's comparison applies: the one in the folder pytest runs in, else the
    project root's (the folder the case ids are relative to), else pytest's rootdir's; None when there is none. A
    session started in a subfolder (`cd bench && pytest ...`) read none, and a declared removal failed the gate."""
    from perfci.compare.expected import EXPECTED_FILE
    from perfci.workloads.pytest_ids import project_root

    here = (cwd or Path.cwd()).resolve()
    for folder in (here, project_root(here), rootpath):
        if (folder / EXPECTED_FILE).is_file():
            return folder / EXPECTED_FILE
    return None
