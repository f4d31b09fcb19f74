"""The pytest plugin's options that perfci's commands share, made from their rows of the options table
(perfci/options.py): the flags, their help and defaults, and one resolution, the commands' own: flag > environment
> `[tool.perfci]` (`rounds`, `round_time_s`, `threads`, `threshold`, `fail_on`; `thresholds` is read by the
comparison) > default, with the same bounds. The plugin's rounds are in-process rounds (measure.py).

Standard library and perfci's core only at import: pytest imports the plugin in every session of an environment
where perfci is installed; the configuration's metric names are loaded only where a configuration exists.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from perfci.config import Config, find_config
from perfci.fractions import parse_fraction
from perfci.options import FAIL_ON, JOB_NOISE, ROUND_TIME, ROUNDS, THREADS, THRESHOLD, Option, resolve

if TYPE_CHECKING:
    from perfci.pytest_plugin.measure import InProcessSettings

PLUGIN_OPTIONS = (ROUNDS, ROUND_TIME, THREADS, THRESHOLD, JOB_NOISE, FAIL_ON)
FROM_CONFIG = frozenset(o.name for o in (ROUNDS, ROUND_TIME, THREADS, THRESHOLD, FAIL_ON))
DEPRECATED_BUDGET_FLAG = "--perfci-budget"
DEPRECATED_BUDGET = (
    f"{DEPRECATED_BUDGET_FLAG} is deprecated and will be removed in the next release; use "
    f"{ROUND_TIME.plugin_flag} (the same sampling time per case and round)"
)


def dest(option: Option) -> str:
    """The option's name on pytest's config (`--perfci-round-time` -> `perfci_round_time`)."""
    assert option.plugin_flag is not None
    return option.plugin_flag.lstrip("-").replace("-", "_")


def add_options(group: Any) -> None:
    """The shared options, on the plugin's option group (argparse: `%` in a help text is written `%%`)."""
    for o in PLUGIN_OPTIONS:
        metavar = {"int": "N", "float": "SECONDS", "fraction": "F", "choice": "|".join(o.choices)}[o.kind]
        text = o.help_text(plugin=True).replace("%", "%%")
        assert o.plugin_flag is not None
        group.addoption(o.plugin_flag, dest=dest(o), metavar=metavar, default=None, help=text)
    group.addoption(DEPRECATED_BUDGET_FLAG, dest="perfci_budget", metavar="SECONDS", default=None,
                    help=f"deprecated name of {ROUND_TIME.plugin_flag}")  # fmt: skip


@dataclass(frozen=True)
class PluginSettings:
    """The shared options of one session, resolved and checked."""

    measure: InProcessSettings
    threshold: float | None
    job_noise: float | None
    fail_on: str | None


def _flag_value(option: Option, text: str | None) -> Any:
    """A flag's text as the option's kind; pytest.UsageError (one line) when it does not read as one."""
    if text is None:
        return None
    try:
        if option.kind == "int":
            return int(text)
        if option.kind == "float":
            return float(text)
        return parse_fraction(text) if option.kind == "fraction" else text
    except ValueError as exc:
        detail = str(exc) if option.kind == "fraction" else f"must be {option.bounds_text()}, not {text!r}."
        raise pytest.UsageError(f"{option.plugin_flag}: {detail}") from None


def project_config(rootpath: Path) -> Config:
    """`perfci.toml` or `[tool.perfci]` of the project (found as `perfci run` finds it, from pytest's rootdir);
    an empty Config when there is none; pytest.UsageError naming the file, line and key when it is not valid."""
    if find_config(rootpath) is None:
        return Config()
    from perfci.api.settings import load_project_config
    from perfci.errors import ConfigError

    try:
        return load_project_config(start=rootpath)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None


def plugin_settings(config: pytest.Config, strict: bool = True) -> PluginSettings:
    """The session's shared options: flag > environment > `[tool.perfci]` > default, each held to its bounds.
    A bad flag is always a usage error. A bad `[tool.perfci]` is one too when `strict` (the session writes or
    compares results); otherwise it is a warning and the configuration is left out: a perf setting must not stop
    a project's plain `pytest` runs, which write and compare nothing."""
    flags = {o.name: _flag_value(o, config.getoption(dest(o))) for o in PLUGIN_OPTIONS}
    old = config.getoption("perfci_budget")
    if old is not None:
        config.issue_config_time_warning(pytest.PytestDeprecationWarning(DEPRECATED_BUDGET), stacklevel=2)
        if flags[ROUND_TIME.name] is None:
            flags[ROUND_TIME.name] = _flag_value(ROUND_TIME, old)
    try:
        return _resolved(config, flags, project_config(config.rootpath))
    except pytest.UsageError as exc:
        if strict:
            raise
        settings = _resolved(config, flags, Config())  # the flags and environment alone: a bad flag is refused
        note = f"perfci: {exc}; the configuration is ignored in this session, which writes and compares nothing"
        config.issue_config_time_warning(pytest.PytestConfigWarning(note), stacklevel=2)
        return settings


def _resolved(config: pytest.Config, flags: dict[str, Any], cfg: Config) -> PluginSettings:
    from perfci.pytest_plugin.measure import InProcessSettings

    for line in cfg.old_key_notes():
        config.issue_config_time_warning(pytest.PytestDeprecationWarning(line.removeprefix("warning: ")), stacklevel=2)
    values: dict[str, Any] = {}
    for o in PLUGIN_OPTIONS:
        configured = getattr(cfg, o.config) if o.config and o.name in FROM_CONFIG else None
        default = o.default if o.plugin_default is None else o.plugin_default
        plugin_option = replace(o, flag=o.plugin_flag, default=default)  # errors name the plugin's flag
        try:
            values[o.name] = resolve(plugin_option, flags[o.name], os.environ, configured, cfg.source)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    measure = InProcessSettings(
        rounds=values[ROUNDS.name], budget_s=values[ROUND_TIME.name], threads=values[THREADS.name]
    )
    return PluginSettings(measure, values[THRESHOLD.name], values[JOB_NOISE.name], values[FAIL_ON.name])
