"""What a lockstep worker started ahead of its pair imports while it waits for its job (engine/runner.py
`prestart`, docs/gpu.md "Where a pair's time goes").

A GPU worker's start is mostly imports: torch, then whatever the cases' set-ups import (transformers, timm, ...).
The first pair's workers report the library modules their set-ups imported (`learned_imports`, sent with
`Prepared`); the runner writes them to a file and names it in the environment of the next pairs' spare workers,
which import them before reading their job (`preload`). Only modules that live in the interpreter's library
folders are listed: a module of the project itself (a helper next to a workload file) could be found under the
same name elsewhere on a spare's path, and the set-up would then get the wrong one. Importing runs no workload
code and measures nothing; a module that fails to import is left to the set-up, which imports it again and
reports what goes wrong there.

The list is also kept in the runner's cache folder (`keep_imports`, `cached_imports`), under a key made of the
worker's interpreter and the run's workload names: the next A/B of the same workloads on this runner has its
first pair's workers import them ahead too, instead of torch alone (a developer's repeated `perfci ab`, a
self-hosted GPU runner that keeps its cache). A list that no longer matches costs only imports the set-ups do
not use; the first pair's own list then replaces it.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import sys
import sysconfig
from collections.abc import Callable, Iterable
from pathlib import Path

TORCH = "torch"  # the preload value that imports torch alone (the first pair's spares know nothing more)
OWN_PREFIXES = ("perfci", "__main__", "__mp_main__")


def library_folders() -> tuple[str, ...]:
    """The interpreter's library folders (standard library and site-packages), as path prefixes."""
    paths = sysconfig.get_paths()
    names = ("stdlib", "platstdlib", "purelib", "platlib")
    return tuple(sorted({str(Path(paths[n]).resolve()) + "/" for n in names if paths.get(n)}))


def learned_imports(
    before: Iterable[str], modules: dict[str, object] | None = None, folders: tuple[str, ...] | None = None
) -> tuple[str, ...]:
    """Modules imported since `before` (names in `sys.modules` then), in import order, that live in `folders`
    (default: `library_folders()`); perfci's own and the workload files' modules are left out."""
    seen = set(before)
    mods = sys.modules if modules is None else modules
    where = library_folders() if folders is None else folders
    out = []
    for name, module in list(mods.items()):
        if name in seen or name.startswith(OWN_PREFIXES):
            continue
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and str(Path(path).resolve()).startswith(where):
            out.append(name)
    return tuple(out)


def write_list(path: Path, names: Iterable[str]) -> str:
    """Write the modules a spare imports (torch first) to `path`; the value for the worker's environment."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([TORCH, *[n for n in names if n != TORCH]]) + "\n", encoding="utf-8")
    return str(path)


def preload(value: str | None, importer: Callable[[str], object] = importlib.import_module) -> int:
    """Import what `value` names: "torch", or a file of module names, one a line. Returns how many imported;
    an unreadable file or a module that fails to import is skipped (the set-up imports it and reports)."""
    if not value:
        return 0
    if value == TORCH:
        names = [TORCH]
    else:
        try:
            names = [n for n in Path(value).read_text(encoding="utf-8").split() if n]
        except OSError:
            names = [TORCH]
    done = 0
    for name in names:
        with contextlib.suppress(Exception):
            importer(name)
            done += 1
    return done


def imports_key(python: str, workloads: Iterable[str]) -> str:
    """The cache key of a run's learned imports: its worker interpreter and its workload names."""
    text = "\n".join([python, *sorted(set(workloads))])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _cache_file(folder: Path, key: str) -> Path:
    return folder / "imports" / f"{key}.txt"


def cached_imports(folder: Path, key: str) -> tuple[str, ...]:
    """The modules kept under `key` (`keep_imports`), or none where there is no readable list."""
    try:
        text = _cache_file(folder, key).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ()
    names = (line.strip() for line in text.splitlines())
    return tuple(n for n in names if n and all(part.isidentifier() for part in n.split(".")))


def keep_imports(folder: Path, key: str, names: Iterable[str]) -> None:
    """Keep `names` under `key` for the next run (written whole, then renamed); a cache that cannot be written
    is no error."""
    path = _cache_file(folder, key)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text("\n".join(names) + "\n", encoding="utf-8")
        tmp.replace(path)
