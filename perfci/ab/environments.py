"""Environments for `perfci ab --base-python/--head-python`: which interpreter each side's workers run, whether it
has what perfci needs, and how the two environments differ.

An environment is named by a Python interpreter or by a virtual environment's folder (`<folder>/bin/python`).
Before anything is measured, `probe` starts that interpreter once with the side's worker environment (the shim
of perfci/ab/revisions.py puts the *installed* perfci first on PYTHONPATH, so both sides run the same perfci)
and asks it for its Python version, the third-party modules perfci's workers import, and the runner fingerprint
as that interpreter sees it (library versions, CUDA, driver). A missing module is one UsageError naming every
missing module and the pip command that installs them, so nothing is measured with a half-working worker.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfci.errors import UsageError
from perfci.profilers.fingerprint_changes import Change, fingerprint_changes

MIN_PYTHON = (3, 11)
# Third-party modules a worker imports (engine/worker.py, profilers/), each with the package that installs it.
WORKER_MODULES = {"msgspec": "msgspec", "numpy": "numpy", "psutil": "psutil"}
PROBE_TIMEOUT_S = 300.0

_PROBE = """
import importlib.util, json, sys
from importlib import metadata
info = {"python": "%d.%d.%d" % sys.version_info[:3], "executable": sys.executable, "missing": []}
if sys.version_info >= tuple(json.loads(sys.argv[1])):
    info["missing"] = [m for m in json.loads(sys.argv[2]) if importlib.util.find_spec(m) is None]
    if not info["missing"]:
        from perfci.profilers.fingerprint import fingerprint
        info["fingerprint"] = fingerprint()
        if json.loads(sys.argv[3]) and importlib.util.find_spec("torch") is not None:
            import torch  # the CUDA toolkit and cuDNN torch was built with: what an image upgrade changes
            v = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
            libs = info["fingerprint"].setdefault("libraries", {})
            libs["torch.cuda"] = torch.version.cuda
            libs["cudnn"] = v and "%d.%d.%d" % ((v // 10000, v // 100 % 100, v % 100) if v >= 90000
                                                else (v // 1000, v // 100 % 10, v % 100))
        found = info["packages"] = {}
        for d in metadata.distributions():  # the first on sys.path is the one imported
            found.setdefault(str(d.metadata["Name"]).lower(), d.version)
print("PERFCI_PROBE " + json.dumps(info))
"""


@dataclass(frozen=True)
class Environment:
    """A side's interpreter as probed: what the user named, the interpreter, and its fingerprint."""

    named: str  # as given (interpreter or venv folder)
    python: str  # the interpreter path workers are started with
    version: str
    fingerprint: dict[str, Any]
    packages: dict[str, str] = field(default_factory=dict)  # every installed distribution: name -> version
    image: str | None = None  # the container image it runs in (perfci/ab/containers.py)
    runtime: str | None = None  # that image's container runtime

    @property
    def label(self) -> str:
        where = f"image {self.image}" if self.image is not None else short_name(self.named)
        return f"{where}, Python {self.version}"


def short_name(named: str) -> str:
    """A venv folder's name (`.venv-torch25`), or an interpreter's path as given."""
    path = Path(named)
    return path.name if path.is_dir() else named


def interpreter(named: str | Path, option: str) -> str:
    """The interpreter of `named`: itself when it is an executable file, `bin/python` (or `Scripts/python.exe`)
    inside it when it is a folder."""
    path = Path(named).expanduser()
    if path.is_dir():
        for candidate in (path / "bin" / "python", path / "bin" / "python3", path / "Scripts" / "python.exe"):
            if candidate.is_file():
                return str(candidate.absolute())
        raise UsageError(
            f"{option} {named}: the folder holds no Python interpreter (bin/python).",
            hint="name a virtual environment's folder or a Python interpreter",
        )
    if not path.is_file() or not os.access(path, os.X_OK):
        raise UsageError(f"{option} {named}: no such interpreter.", hint="name a Python interpreter or a venv folder")
    return str(path.absolute())


def probe(named: str | Path, option: str, env: dict[str, str], cwd: Path) -> Environment:
    """Start the interpreter once with the worker environment `env`; a usable environment's facts, else one
    UsageError naming what is missing and how to install it."""
    python = interpreter(named, option)
    pip = f"{shlex.quote(python)} -m pip install"
    return probe_interpreter(
        str(named), python, option, env, cwd, pip, f"install perfci's dependencies there: {pip} perfci"
    )


def probe_interpreter(
    named: str, python: str, option: str, env: dict[str, str], cwd: Path, pip: str, hint: str, toolkit: bool = False
) -> Environment:
    """`probe` of the interpreter `python` (an executable or a stand-in for one: a container image's launcher,
    perfci/ab/containers.py); `pip` is the command that installs a package there, `hint` what to do when perfci
    cannot start there at all. With `toolkit`, the fingerprint's
    libraries also name the CUDA toolkit and cuDNN that torch was built with (`torch.cuda`, `cudnn`)."""
    cmd = [python, "-c", _PROBE, json.dumps(MIN_PYTHON), json.dumps(sorted(WORKER_MODULES)), json.dumps(toolkit)]
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"{option} {named}: cannot start {python} ({exc}).") from None
    line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("PERFCI_PROBE ")), None)
    if proc.returncode != 0 or line is None:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise UsageError(f"{option} {named}: perfci cannot run in this environment: {tail}", hint=hint)
    info: dict[str, Any] = json.loads(line[len("PERFCI_PROBE ") :])
    version = str(info.get("python", "?"))
    if "fingerprint" not in info and not info.get("missing"):
        wanted = ".".join(map(str, MIN_PYTHON))
        raise UsageError(
            f"{option} {named}: Python {version}, and perfci's workers need Python {wanted} or newer.",
            hint=f"make the environment with Python {wanted}+ (e.g. python{wanted} -m venv FOLDER)",
        )
    if info.get("missing"):
        needed = [WORKER_MODULES.get(m, m) for m in info["missing"]]
        raise UsageError(
            f"{option} {named}: the environment lacks {', '.join(needed)}, which perfci's workers import.",
            hint=f"install: {pip} {' '.join(needed)}",
        )
    packages = {str(k): str(v) for k, v in (info.get("packages") or {}).items()}
    return Environment(named, python, version, dict(info["fingerprint"]), packages)


def environment_changes(base: Environment, head: Environment) -> list[Change]:
    """The software differences between two environments: the fingerprint's (Python, library versions, CUDA and
    GPU driver), then every other installed distribution whose version differs, was added or was removed
    (`absent` on the side that lacks it). The hardware is the same machine by construction."""
    changes = fingerprint_changes(base.fingerprint, head.fingerprint)[1]
    named = {key for key, _, _ in changes}
    for name in sorted(set(base.packages) | set(head.packages)):
        a, b = base.packages.get(name, "absent"), head.packages.get(name, "absent")
        if a != b and name not in named:
            changes.append((name, a, b))
    return changes


def describe(base: Environment, head: Environment) -> dict[str, Any]:
    """The `environments` entry of an A/B's settings (comparison.json): each side's interpreter and the
    fingerprint facts that tell environments apart."""

    def side(e: Environment) -> dict[str, Any]:
        fp = e.fingerprint
        facts = {"named": e.named, "python": e.python, "version": e.version, "libraries": fp.get("libraries", {}),
                 "cuda_driver": fp.get("cuda_driver"), "gpu_driver": fp.get("gpu_driver")}  # fmt: skip
        return facts if e.image is None else {**facts, "image": e.image, "runtime": e.runtime}

    return {"base": side(base), "head": side(head)}


def changes_line(changes: list[Change]) -> str:
    """One line for the top of every output: `environments differ: torch 2.4.0 -> 2.5.0; python 3.11 -> 3.12`."""
    if not changes:
        return "environments: no difference in library versions, CUDA, driver or Python"
    return "environments differ (base -> head): " + "; ".join(f"{k} {a} -> {b}" for k, a, b in changes)
