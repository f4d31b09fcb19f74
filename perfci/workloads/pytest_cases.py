"""pytest tests as cases (`perfci ab --pytest PATH`): a test that uses pytest-benchmark's `benchmark` fixture or
perfci's `perf` fixture is one case, measured in worker processes like a workload's.

- A source `pytest:<path>` names a test file or a folder of them. Listing collects it with pytest in this process
  (`pytest --collect-only`) and keeps the tests that request `benchmark` or `perf`.
- A case's id is the test's node id with its file relative to the project root, then `@cpu`
  (`bench/test_sort.py::test_sorted[1000]@cpu`), whatever pytest's rootdir: the project root is the closest
  folder at or above the one perfci runs in (an A/B lists each side in its checkout's top folder) with a
  `pyproject.toml`, `perfci.toml` or `.git`. Both revisions then give a test the same id, the id the pytest
  plugin records for it.
- In the worker the case's set-up runs the test once (workloads/pytest_capture.py) and returns the callable the
  test measured; the engine warms it up, calibrates and samples it.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfci.errors import WorkloadDefinitionError
from perfci.format.model import CaseSpec
from perfci.workloads.api import Workload, WorkloadContext
from perfci.workloads.discovery import PYTEST_PREFIX
from perfci.workloads.pytest_ids import project_root, stable_test_id

PYTEST_SUITE = "pytest"
MEASURING_FIXTURES = ("benchmark", "perf")
GROUP_TAG = "group:"
# the tag of a case read from the text of a file pytest could not collect (`measuring_tests_in`): an A/B takes the
# other revision's ids for that file where it collects there (ab/listing.adopt_uncollected)
UNCOLLECTED_TAG = "pytest:uncollected"
# a top-level test taking a measuring fixture, found in the text of a file that does not parse
_TOP_LEVEL_MEASURING_TEST = re.compile(r"^(?:async[ \t]+)?def[ \t]+(test\w*)[ \t]*\([^)]*\b(?:benchmark|perf)\b", re.M)


def pytest_source(path: Path) -> str:
    return f"{PYTEST_PREFIX}{path}"


def source_path(source: str) -> Path:
    return Path(source[len(PYTEST_PREFIX) :])


@dataclass(eq=False)  # hashable: pytest keys its hook callers by plugin (a folder with a conftest.py)
class _Collector:
    """Keeps the collected items that request a measuring fixture, the test files pytest could not collect, and
    the other collection errors."""

    items: list[tuple[Path, str, tuple[str, ...]]] = field(default_factory=list)
    broken: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    rootpath: Path = Path()

    def pytest_sessionstart(self, session: Any) -> None:
        self.rootpath = Path(session.config.rootpath)

    def pytest_collectreport(self, report: Any) -> None:
        if not report.failed:
            return
        file = self.rootpath / report.nodeid.split("::", 1)[0] if report.nodeid else None
        if file is not None and file.is_file() and "::" not in report.nodeid:
            self.broken.append(file)
            return
        text = str(getattr(report, "longreprtext", "") or "").strip().splitlines()
        self.errors.append(f"{report.nodeid or 'collection'}: {text[-1] if text else 'error'}")

    def pytest_collection_finish(self, session: Any) -> None:
        for item in session.items:
            if not any(f in getattr(item, "fixturenames", ()) for f in MEASURING_FIXTURES):
                continue
            marker = item.get_closest_marker("benchmark")
            group = marker.kwargs.get("group") if marker is not None else None
            tags = (f"{GROUP_TAG}{group}",) if group else ()
            self.items.append((Path(item.path), item.nodeid, tags))


def list_pytest_cases(source: str) -> list[CaseSpec]:
    """The measuring tests of a `pytest:<path>` source, as cases (one per test, on `cpu`)."""
    import pytest

    from perfci.workloads.pytest_addopts import FilterAddopts
    from perfci.workloads.pytest_capture import SESSION_OPTIONS, quiet_session

    path = source_path(source)
    if not path.exists():
        raise WorkloadDefinitionError(f"{path}: no such pytest file or folder.")
    collector = _Collector()
    said = io.StringIO()
    with quiet_session(silent=True), contextlib.redirect_stderr(said):  # the test list is not the user's business
        code = pytest.main([str(path), "--collect-only", *SESSION_OPTIONS], plugins=[collector, FilterAddopts()])
    if collector.errors:
        raise WorkloadDefinitionError(
            f"{path}: pytest could not collect the tests: {collector.errors[0]}",
            hint="run `pytest --collect-only` on it to see the whole error",
        )
    stopped = code not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
    if stopped and not collector.broken:
        lines = [ln.strip() for ln in said.getvalue().splitlines() if ln.strip()]
        errors = [ln for ln in lines if "error:" in ln.lower()]  # "pytest.main(): error: unrecognized arguments"
        why = f": {errors[-1][:500]}" if errors else ""  # a usage error's own words
        raise WorkloadDefinitionError(f"{path}: pytest stopped collecting the tests (exit code {int(code)}){why}.")
    # a file that does not import at this revision: its tests, read from its text, are cases that fail (`error`)
    collector.items += [
        (f, f"{f.name}::{test}", (UNCOLLECTED_TAG,)) for f in collector.broken for test in measuring_tests_in(f)
    ]
    root = project_root(Path.cwd())
    return [
        CaseSpec(
            workload=stable_test_id(file, nodeid, root),
            params={},
            device="cpu",
            source=pytest_source(file.resolve()),
            tags=tags,
            suite=PYTEST_SUITE,
        )
        for file, nodeid, tags in collector.items
    ]


def measuring_tests_in(path: Path) -> list[str]:
    """The measuring tests of a file pytest cannot collect, read from its syntax: `test_x` and `TestGroup::test_y`
    that take a `benchmark` or `perf` argument (parametrised tests cannot be named so and are left out); none when
    the file cannot be read. A file that is not valid Python is read line by line: its top-level `def test_x(...
    benchmark ...` lines, so that its tests are `error` rows, not dropped."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return _TOP_LEVEL_MEASURING_TEST.findall(text)

    def measuring(nodes: list[ast.stmt]) -> list[str]:
        functions = [n for n in nodes if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        tests = [f for f in functions if f.name.startswith("test")]
        return [
            t.name
            for t in tests
            if not any("parametrize" in ast.unparse(d) for d in t.decorator_list)
            and any(a.arg in MEASURING_FIXTURES for a in t.args.args)
        ]

    found = measuring(tree.body)
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.startswith("Test")):
        found += [f"{cls.name}::{name}" for name in measuring(cls.body)]
    return found


def pytest_workload(source: str, workload_id: str) -> Workload:
    """The case `workload_id` of `source` as a workload whose set-up runs the test and returns what it measured."""
    path = source_path(source)
    if "::" not in workload_id:
        raise WorkloadDefinitionError(f"{workload_id!r} is not a pytest node id (file::test).")
    rest = workload_id.split("::", 1)[1]

    def run_file(*_case: object) -> Any:
        from perfci.workloads.pytest_capture import file_tests

        return file_tests(path).callable_of(rest)

    def setup(ctx: WorkloadContext) -> Any:
        from perfci.workloads.pytest_capture import check_context, times_after_test
        from perfci.workloads.torch_modes import under_modes

        captured = run_file()
        check_context(captured, lambda calls: times_after_test(captured, calls))
        fn = under_modes(captured.fn, captured.modes)  # the test's torch.no_grad() or inference_mode(), again
        ctx.flops, ctx.bytes = captured.flops, captured.nbytes
        ctx.notes["pytest"] = captured.how
        if captured.modes is not None and captured.modes.words:
            ctx.notes["pytest_torch_mode"] = captured.modes.words
        return fn

    # the file's session (pytest's own start and every measuring test's fixtures) runs before the memory window:
    # charged to whichever test came first in its worker, it read 14 MB in one round and 0 in the next
    return Workload(name=workload_id, setup=setup, suite=PYTEST_SUITE, preload=run_file)
