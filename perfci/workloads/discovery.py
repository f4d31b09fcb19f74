"""Find workloads: built-in suites by name, user files and folders by path. Import errors become clear messages.
A file ending in `.onnx` is an ONNX model, run over its precision variants (workloads/onnx_file.py).

A workload file can import modules that sit next to it and modules of its project: before it is executed, its
folder and its project root (the closest folder above it with a `perfci.toml`, a `pyproject.toml` or a
`.git`) are put at the front of `sys.path` (as pytest does with its rootdir), in the CLI and in the worker alike.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import NoReturn

from perfci.errors import WorkloadDefinitionError
from perfci.format.model import CaseSpec
from perfci.workloads.api import MADE_KEY, Workload, recording_workloads

BUILTIN_PACKAGE = "perfci.workloads.builtin"
BUILTIN_SUITES = ("default", "kernels", "models", "onnx")
MODULE_PREFIX = "module:"
PYTEST_PREFIX = "pytest:"  # a pytest file or folder whose benchmark tests are cases


def builtin_source(suite: str) -> str:
    return f"{MODULE_PREFIX}{BUILTIN_PACKAGE}.{suite}"


def source_stem(source: str) -> str:
    if source.startswith(MODULE_PREFIX):
        return source.rsplit(".", 1)[-1]
    return Path(source).stem


@contextlib.contextmanager
def _fd1_to_stderr() -> Iterator[None]:
    """File descriptor 1 pointed at 2 for the duration (what C code or `os.write(1, ...)` prints); nothing
    changes where either descriptor is closed."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)


def load_source(source: str) -> ModuleType:
    """Import a workload module given as `module:<dotted name>` or as a file path."""
    if source.startswith(MODULE_PREFIX):
        return importlib.import_module(source[len(MODULE_PREFIX) :])
    path = Path(source)
    if path.suffix.lower() == ".onnx":
        return _onnx_module(path)
    name = f"perfci_user_{abs(hash(str(path.resolve())))}_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise WorkloadDefinitionError(f"{path}: cannot be imported as a Python module.")
    module = importlib.util.module_from_spec(spec)
    for folder in import_roots(path):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    sys.modules[name] = module
    try:
        # what the file prints goes to stderr: stdout carries `--format json` (a print broke the JSON,
        # and so did a write to file descriptor 1)
        with (
            _fd1_to_stderr(),
            contextlib.redirect_stdout(sys.stderr),
            _import_guard(),
            recording_workloads(module.__dict__),
        ):
            exec(compile(path.read_bytes(), str(path), "exec", dont_inherit=True), module.__dict__)
    except SyntaxError as exc:
        del sys.modules[name]
        raise WorkloadDefinitionError(
            f"{path}:{exc.lineno}: syntax error in workload file: {exc.msg}.",
        ) from None
    except WorkloadDefinitionError as exc:  # the decorator's own error: the file named, the words kept
        del sys.modules[name]
        raise WorkloadDefinitionError(f"{path}: {exc.message}", hint=exc.hint) from None
    except _ImportStopped as exc:
        del sys.modules[name]
        raise WorkloadDefinitionError(f"{path}: {exc}") from None
    except (Exception, SystemExit) as exc:  # SystemExit: `sys.exit(3)` at import ended perfci silently
        del sys.modules[name]
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        raise WorkloadDefinitionError(
            f"{path}: importing the workload file raised {type(exc).__name__}: {exc} "
            f"(at {Path(frame.filename).name}:{frame.lineno}).",
        ) from None
    return module


IMPORT_TIMEOUT_S = 120.0  # a workload file's import (its libraries: torch, transformers) takes seconds, not minutes


class _ImportStopped(BaseException):
    """A workload file's import stopped by perfci: it called `os._exit`, or it ran past IMPORT_TIMEOUT_S. A
    BaseException, so that the file's own `except Exception` does not swallow it."""


@contextlib.contextmanager
def _import_guard() -> Iterator[None]:
    """While a workload file is imported: `os._exit(n)` raises instead of ending perfci (an `os._exit(0)` at the
    end of a file made `perfci run` exit 0 having measured nothing), and an import running past
    IMPORT_TIMEOUT_S is stopped (a `while True: pass` hung `perfci list` and `run` with no limit; the alarm needs
    the main thread, elsewhere only `os._exit` is guarded)."""

    def refuse_exit(status: int) -> NoReturn:
        raise _ImportStopped(f"importing the workload file called os._exit({status}); a workload file must not exit")

    def out_of_time(signum: int, frame: object) -> None:
        raise _ImportStopped(f"importing the workload file took longer than {IMPORT_TIMEOUT_S:g} s; stopped")

    real_exit = os._exit
    os._exit = refuse_exit
    timed = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    previous = signal.signal(signal.SIGALRM, out_of_time) if timed else None
    if timed:
        signal.setitimer(signal.ITIMER_REAL, IMPORT_TIMEOUT_S)
    try:
        yield
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        os._exit = real_exit


def _onnx_module(path: Path) -> ModuleType:
    """An ONNX file named as a workload: one workload over its variants (workloads/onnx_file.py)."""
    from perfci.workloads.onnx_file import module_for

    try:
        return module_for(path)
    except WorkloadDefinitionError as exc:  # named as given, once (it said "x.onnx: /abs/x.onnx: ...")
        said = exc.message.removeprefix(f"{path.resolve()}: ")
        raise WorkloadDefinitionError(f"{path}: {said}", hint=exc.hint) from None
    except Exception as exc:  # a file that is not an ONNX model: a message, not a traceback
        raise WorkloadDefinitionError(f"{path}: cannot be read as an ONNX model: {type(exc).__name__}: {exc}") from None


PROJECT_MARKERS = ("perfci.toml", "pyproject.toml", ".git")


def import_roots(path: Path) -> list[Path]:
    """The workload file's folder and its project root (when there is one), the root last."""
    folder = path.resolve().parent
    roots = [folder]
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).exists() for marker in PROJECT_MARKERS):
            if candidate != folder:
                roots.append(candidate)
            break
    return roots


def workloads_in(module: ModuleType) -> list[Workload]:
    """The module's workloads: those its code made (api.MADE_KEY: bound to a name or not, in a loop, a list or a
    dict), then those bound to its names (imported ones too); one bound under two names counts once. Two that share
    a name are refused (the second was never measured, or its cases ran the first one's set-up)."""
    found: dict[str, Workload] = {}
    names = vars(module)
    for obj in [*names.get(MADE_KEY, ()), *names.values()]:
        if not isinstance(obj, Workload) or found.get(obj.name) is obj:
            continue
        if obj.name in found:
            where = getattr(module, "__file__", None) or module.__name__
            raise WorkloadDefinitionError(
                f"{where}: two workloads are named {obj.name!r}.", hint="give each its own name= or function name"
            )
        found[obj.name] = obj
    return list(found.values())


def find_workload(source: str, workload_id: str) -> Workload:
    """The workload `<stem>.<name>` from `source` (used by the worker process)."""
    if source.startswith(PYTEST_PREFIX):  # a pytest test (workloads/pytest_cases.py)
        from perfci.workloads.pytest_cases import pytest_workload

        return pytest_workload(source, workload_id)
    name = workload_id.split(".", 1)[1] if "." in workload_id else workload_id
    for w in workloads_in(load_source(source)):
        if w.name == name:
            return w
    raise WorkloadDefinitionError(f"{source}: no workload named {name!r}.")


def expand_paths(paths: list[Path]) -> list[str]:
    """Workload files named directly, or every `*.py` (not starting with `_`) under a folder, sorted; a file reached
    twice (`wl.py ./wl.py`, a folder and a file in it) once, under the first spelling."""
    found: dict[Path, str] = {}
    for p in paths:
        if p.is_dir():
            files = [f for f in sorted(p.rglob("*.py")) if not f.name.startswith("_")]
            if not files:  # else nothing found at all fell back to the built-in suite, measured without a word
                raise WorkloadDefinitionError(f"{p}: no workload files (*.py) in this folder.")
        elif p.is_file():
            files = [p]
        else:
            raise WorkloadDefinitionError(f"{p}: no such workload file or folder.")
        for f in files:
            found.setdefault(f.resolve(), str(f))
    return list(found.values())


def cases_from_sources(sources: list[str]) -> list[CaseSpec]:
    return [spec for spec, reason in all_cases_from_sources(sources) if reason is None]


def all_cases_from_sources(sources: list[str]) -> list[tuple[CaseSpec, str | None]]:
    """Every case with the reason its workload's skip predicate leaves it out (None: it runs)."""
    cases: list[tuple[CaseSpec, str | None]] = []
    for source in sources:
        if source.startswith(PYTEST_PREFIX):  # pytest's benchmark and perf tests (workloads/pytest_cases.py)
            from perfci.workloads.pytest_cases import list_pytest_cases

            cases += [(spec, None) for spec in list_pytest_cases(source)]
            continue
        stem = source_stem(source)
        for w in workloads_in(load_source(source)):
            cases += w.all_cases(stem, source)
    return cases
