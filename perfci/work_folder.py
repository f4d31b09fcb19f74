"""The project's work folder, `.perfci/`: where `perfci run` and `perfci ab` write when no `--out` is given, and
the default history store. It is made with a `.gitignore` that ignores everything in it (as pytest does for its
cache), so that `git status` stays clean and no run is committed by a `git add -A`."""

from __future__ import annotations

import os
from pathlib import Path

WORK_FOLDER = ".perfci"
IGNORE_TEXT = "# made by perfci: runs, A/Bs and the history store are outputs, not sources\n*\n"


def mark_work_folder(path: Path) -> None:
    """Where `path` lies in a `.perfci` folder, make that folder with its `.gitignore` (an existing one is kept).
    A folder that cannot be written is left alone: writing the outputs then fails with its own error."""
    folder = next((p for p in (path, *path.parents) if p.name == WORK_FOLDER), None)
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        ignore = folder / ".gitignore"
        if not ignore.exists():
            ignore.write_text(IGNORE_TEXT, encoding="utf-8")
    except OSError:
        return


def remove_stale_outputs(out: Path, *names: str) -> None:
    """Remove the outputs `names` that a command writes only sometimes (`comparison.json` where there was a baseline,
    `junit.xml` from `perfci compare`) from an earlier command into the same `--out` folder: a run without a
    baseline into a folder that held a comparison would leave that old comparison beside its new results, to be
    read as this run's. Other files in the folder stay."""
    for name in names:
        (out / name).unlink(missing_ok=True)


def cache_dir() -> Path:
    """perfci's cache (measured peaks, learned imports, converted ONNX files): `$PERFCI_CACHE_DIR`, else
    `$XDG_CACHE_HOME/perfci`, else `~/.cache/perfci`. One folder for all of them: the peaks ignored the variable."""
    if base := os.environ.get("PERFCI_CACHE_DIR"):
        return Path(base)
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        return Path(xdg) / "perfci"
    return Path.home() / ".cache" / "perfci"
