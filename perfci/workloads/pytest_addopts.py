"""The project's pytest `addopts` in the sessions perfci runs itself (`perfci ab --pytest`'s listing and workers),
less the options that would change what runs or how it is timed in perfci's process.

A project's `addopts` carry what its tests need to be collected and run as its developers run them
(`--import-mode=importlib`, `-m "not gpu"`, an option its `conftest.py` defines and reads to skip or not), so they
are kept: without them, a test skipped unless `--run-slow` is given was skipped on both sides, a `missing` row on
purpose, and the A/B passed. Taken out (`FilterAddopts`, before the options are parsed):

- pytest-xdist's (`-n`, `--dist`, ...): the tests must run in this process, where the callable is kept;
- the cache's and stepwise's (`--lf`, `--ff`, `--sw`, ...): the cache plugin is off in these sessions (nothing is
  written into the checkout), and a session must run the tests it is asked for;
- hypothesis's and perfci's own plugin's (both off in these sessions: `pytest_capture.SESSION_OPTIONS`);
- `--benchmark-skip` and `--benchmark-only` (they would skip the measuring tests of one fixture or the other),
  `--junitxml` (a file written into the checkout), and pytest-benchmark's storage goes to a temporary folder
  (its `.benchmarks/` was made in the checkout);
- and where pytest-cov is loaded, `--no-cov` is added: coverage tracing would be in every timed call.

`$PYTEST_ADDOPTS`, the caller's environment rather than the project's, is left out (pytest_capture.quiet_session).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from perfci.options import ALLOW_MISSING

# long options dropped, with whether each takes a value (`--opt VALUE` or `--opt=VALUE`)
DROPPED = {
    "--numprocesses": True, "--dist": True, "--maxprocesses": True, "--tx": True, "--rsyncdir": True,
    "--max-worker-restart": True, "--maxschedchunk": True, "--looponfail": False,
    "--lf": False, "--last-failed": False, "--ff": False, "--failed-first": False, "--nf": False,
    "--new-first": False, "--cache-clear": False, "--lfnf": True, "--last-failed-no-failures": True,
    "--sw": False, "--stepwise": False, "--sw-skip": False, "--stepwise-skip": False, "--sw-reset": False,
    "--stepwise-reset": False,
    "--benchmark-skip": False, "--benchmark-only": False,
    "--junitxml": True, "--junit-xml": True, "--junit-prefix": True,
}  # fmt: skip
SHORT_DROPPED = {"-n": True, "-d": False, "-f": False}  # xdist's -n N (or -nN), --tx's -d, --looponfail's -f
# whole families of a plugin that is off in these sessions; the options of each that take no value
FAMILIES = {
    "--hypothesis-": {"--hypothesis-show-statistics", "--hypothesis-explain"},
    "--perfci-": {"--perfci-disable", str(ALLOW_MISSING.plugin_flag)},
}


def _takes_value(name: str) -> bool | None:
    """Whether the long option `name` is dropped (None: kept), and then whether it takes a value."""
    if name in DROPPED:
        return DROPPED[name]
    for prefix, flags in FAMILIES.items():
        if name.startswith(prefix):
            return name not in flags
    return None


def without_dropped(args: Iterable[str]) -> list[str]:
    """`args` less the dropped options and their values (see the module docstring)."""
    out: list[str] = []
    items = list(args)
    i = 0
    while i < len(items):
        arg = items[i]
        i += 1
        if arg == "--":  # what follows is positional
            out += items[i - 1 :]
            break
        if arg.startswith("--"):
            name, eq, _ = arg.partition("=")
            value = _takes_value(name)
            if value is None:
                out.append(arg)
            elif value and not eq:
                i += 1  # its value, the next token
            continue
        short = arg[:2]
        if arg.startswith("-") and short in SHORT_DROPPED:
            if SHORT_DROPPED[short] and len(arg) == 2:
                i += 1  # `-n 4`; `-n4` holds its value
            continue
        out.append(arg)
    return out


class FilterAddopts:
    """A plugin for pytest.main(plugins=[...]): drops the options above from the arguments (the project's
    `addopts` are in them by then), and turns pytest-cov off where it is loaded."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_load_initial_conftests(self, early_config: pytest.Config, parser: Any, args: list[str]) -> None:
        del parser
        args[:] = without_dropped(args)
        if early_config.pluginmanager.hasplugin("pytest_cov"):
            args.append("--no-cov")
        if early_config.pluginmanager.hasplugin("benchmark"):
            args.append(f"--benchmark-storage=file://{Path(tempfile.gettempdir()) / 'perfci-pytest-benchmark'}")
