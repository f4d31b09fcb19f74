"""The project's work folder, `.perfci/`: where `perfci run` and `perfci ab` write when no `--out` is given, and
the default history store. It is made with a `.gitignore` that ignores everything in it (as pytest does for its
cache), so that `git status` stays clean and no run is committed by a `git add -A`."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from perfci.errors import UsageError

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


def mark_new_output_folder(path: Path) -> None:
    """A default output folder outside `.perfci/` (`perfci ci`'s `perfci-out/`), made here with the same
    `.gitignore` when it does not exist yet: a local `perfci ci` left it untracked in `git status`. An existing
    folder is left as it is (it may be the user's), and so is one that cannot be made."""
    if path.exists():
        return
    try:
        path.mkdir(parents=True)
        (path / ".gitignore").write_text(IGNORE_TEXT, encoding="utf-8")
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


def new_output_folder(kind: str, make: bool = True) -> Path:
    """`.perfci/<kind>/<UTC time to the second>`, this command's alone: two commands started in the same second
    were given one folder, and one's results replaced the other's (both printed the same path). A name that is
    taken gets `-2`, `-3`, ... With `make`, the folder is made now (its name then cannot be taken by another), the
    work folder with its `.gitignore` first; without, it is only named (a command that may still be refused makes
    it later, under `output_folder_lock`, which refuses a second command in it)."""
    base = Path(WORK_FOLDER) / kind / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    if make:
        mark_work_folder(base)
    for folder in (base, *(base.with_name(f"{base.name}-{n}") for n in range(2, 10_000))):
        if not make and not folder.exists():
            return folder
        if make:
            with contextlib.suppress(FileExistsError):
                folder.mkdir(parents=True)  # made, or taken by another command: the next name
                return folder
    raise UsageError(f"{base}: no free output folder name; give one with --out.")


@contextlib.contextmanager
def output_folder_lock(folder: Path) -> Iterator[None]:
    """Hold `folder` for this command while it writes there: a second `perfci run` or `ab` given the same `--out`
    is refused at once (two runs into one folder left one's results, while both said they were written there).
    An advisory lock on the folder itself, released when the command ends, however it ends."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(
                f"--out {folder}: another perfci command is writing there now.",
                hint="give each concurrent run or A/B its own --out (or none: each gets its own folder)",
            ) from None
        yield
    finally:
        os.close(fd)
