"""Case ids of pytest tests that do not depend on pytest's rootdir.

pytest's node ids are relative to its rootdir, which moves with the command line: with no configuration file,
`pytest bench --perfci-compare /elsewhere/base.json` puts the rootdir at the common parent of `bench` and
`/elsewhere`, and every node id changes. perfci names a test by its file's path relative to the project root
instead: the closest folder at or above the directory pytest was started from that holds a `pyproject.toml`, a
`perfci.toml` or a `.git` (the git top level), else that directory itself. The rest of the id (class, test name,
parameters) is pytest's.

One rule for the pytest plugin's cases (pytest_plugin/plugin.py) and the A/B's pytest cases (pytest_cases.py),
so a test has one id in both. Standard library only: the plugin is imported by every pytest session.
Ids written by earlier versions (relative to the rootdir) still match these: perfci/compare/case_ids.py.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT_MARKERS = ("pyproject.toml", "perfci.toml", ".git")


def project_root(start: Path) -> Path:
    """The folder the test ids are relative to (see the module docstring)."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if any((folder / marker).exists() for marker in ROOT_MARKERS):
            return folder
    return here


def stable_test_id(path: Path, nodeid: str, root: Path) -> str:
    """`<file relative to root>::<the rest of pytest's node id>`, with `/` between folders on every system.

    A test file outside `root` is named relative to it all the same (`../other/test_x.py::test_y`)."""
    _, sep, rest = nodeid.partition("::")
    try:
        rel = path.resolve().relative_to(root).as_posix()
    except ValueError:
        rel = Path(os.path.relpath(path.resolve(), root)).as_posix()
    return f"{rel}{sep}{rest}" if sep else rel
