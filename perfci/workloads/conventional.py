"""A project's conventional places for what `perfci ab` and `perfci ci` measure when nothing is named or configured.

- perfci workloads: the `*.py` files under `perf/` and `benchmarks/` that define one (`@perfci.workload`,
  `@workload`, `perfci.model_workload(...)`); other files there (helpers, pytest-benchmark tests, scripts) are
  left alone.
- pytest benchmarks: the test files (`test_*.py`, `*_test.py`) under `benchmarks/`, `bench/`, `perf/` and `tests/`
  with a test that requests pytest-benchmark's `benchmark` fixture or perfci's `perf` fixture.

Files are read as text, not imported: finding them runs none of the project's code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

WORKLOAD_FOLDERS = ("perf", "benchmarks")
PYTEST_FOLDERS = ("benchmarks", "bench", "perf", "tests")
_DEFINES_WORKLOAD = re.compile(r"@(?:perfci\.)?workload\b|\b(?:perfci\.)?model_workload\s*\(")
_MEASURING_TEST = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+test\w*[ \t]*\([^)]*\b(?:benchmark|perf)\b", re.M)
_SKIPPED_PARTS = {"__pycache__", "node_modules", "site-packages"}
MAX_FILE_BYTES = 2_000_000  # larger files are not read (generated data, not a workload file)


@dataclass(frozen=True)
class Conventional:
    """What was found under a project root: workload files and pytest benchmark files, sorted."""

    workloads: tuple[Path, ...] = ()
    pytest: tuple[Path, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.workloads or self.pytest)

    def describe(self, root: Path) -> str:
        """`perf/ (2 workload files), benchmarks/ (1 pytest benchmark file)`."""
        parts = []
        for files, what in ((self.workloads, "workload file"), (self.pytest, "pytest benchmark file")):
            by_folder: dict[str, int] = {}
            for f in files:
                top = f.relative_to(root).parts[0]
                by_folder[top] = by_folder.get(top, 0) + 1
            parts += [f"{top}/ ({n} {what}{'s' if n > 1 else ''})" for top, n in by_folder.items()]
        return ", ".join(parts)


def _python_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(
        f
        for f in folder.rglob("*.py")
        if f.is_file()
        and not f.name.startswith("_")
        and not any(p.startswith(".") or p in _SKIPPED_PARTS for p in f.relative_to(folder).parts)
    )


def _text(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return ""
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def is_test_file(path: Path) -> bool:
    return path.name.startswith("test_") or path.name.endswith("_test.py")


def defines_workload(path: Path) -> bool:
    text = _text(path)
    return "perfci" in text and bool(_DEFINES_WORKLOAD.search(text))


def has_measuring_test(path: Path) -> bool:
    return bool(_MEASURING_TEST.search(_text(path)))


def conventional_sources(root: Path) -> Conventional:
    """The workload files and pytest benchmark files in `root`'s conventional folders (see the module docstring)."""
    workloads = [
        f
        for folder in WORKLOAD_FOLDERS
        for f in _python_files(root / folder)
        if not is_test_file(f) and f.name != "conftest.py" and defines_workload(f)
    ]
    seen: set[Path] = set()
    tests = []
    for folder in PYTEST_FOLDERS:
        for f in _python_files(root / folder):
            if f not in seen and is_test_file(f) and has_measuring_test(f):
                seen.add(f)
                tests.append(f)
    return Conventional(tuple(workloads), tuple(tests))


def pytest_benchmarks_in(paths: list[Path]) -> list[Path]:
    """The pytest benchmark files among `paths` (files, or folders searched), for a command that takes workloads
    only and was given such tests (`perfci run tests/`)."""
    files = [f for p in paths for f in ([p] if p.is_file() else _python_files(p))]
    return [f for f in dict.fromkeys(files) if is_test_file(f) and has_measuring_test(f)]
