"""Project configuration: `perfci.toml` or `[tool.perfci]` in `pyproject.toml`.

The `Config` dataclass is what the rest of perfci reads; `load_config` finds, parses and validates the file
(unknown key, wrong type, bad pattern, missing path: a ConfigError naming the file, the line where it can be
found, and the key). The accepted keys are documented in docs/workloads.md ("Configuration").
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfci.cpus import MAX_CPU, parse_cpu_list
from perfci.errors import ConfigError
from perfci.fractions import parse_fraction
from perfci.options import (
    CASE_TIMEOUT,
    FAIL_ON,
    GPU_MODE,
    OPTIONS,
    ROUND_TIME,
    ROUNDS,
    THREADS,
    THRESHOLD,
    Option,
    by_config_key,
)
from perfci.patterns import case_pattern

CONFIG_FILE = "perfci.toml"
PYPROJECT = "pyproject.toml"
# the devices a case runs on: the CPU, the current CUDA GPU or GPU N (workloads/api.py, workloads/selection.py)
DEVICE_RE = re.compile(r"^(?:cpu|cuda(?::[0-9]+)?)$")


@dataclass(frozen=True)
class Config:
    source: Path | None = None  # the file it came from; None when no configuration was found
    paths: tuple[Path, ...] = ()  # workload files or folders (relative paths resolved against the file's folder)
    suites: tuple[str, ...] = ()  # built-in or user suites to run by default
    pytest: tuple[Path, ...] = ()  # pytest files or folders whose benchmark tests `perfci ab` and `ci` measure
    devices: tuple[str, ...] = ()  # devices to run on by default (empty: every device present on the runner)
    # case pattern (perfci.patterns: substring, glob or re:, e.g. "kernels.*") -> metric name or family ->
    # practical threshold as a fraction, e.g. {"kernels.*": {"latency": 0.03, "memory": 0.01}} (an accuracy key's
    # is absolute, in the metric's own unit: `absolute_keys`)
    thresholds: dict[str, dict[str, float]] = field(default_factory=dict)
    rounds: int | None = None
    case_timeout_s: float | None = None
    round_time_s: float | None = None  # sampling time per case and round (older key: budget_s)
    runner: str | None = None  # runner class name (names baselines/<runner>.json)
    build_command: str | None = None  # for `perfci ab`: how to make a checked-out revision importable
    threads: int | None = None  # torch/ORT intra-op threads per worker (0: the library's default)
    cpus: tuple[int, ...] | None = None  # CPUs the workers are pinned to (None: not pinned)
    speed_reference: bool | None = None  # time the speed reference beside CPU torch cases (profilers/reference.py)
    gpu_mode: str | None = None  # CUDA timing: one of GPU_MODE.choices (the profilers' cuda_timing.MODES)
    history_noise: bool | None = None  # unpaired comparisons take the cross-job noise from the history store
    fail_on: str | None = None  # what fails the gate: "regression" (default) or "slower" (also below-threshold)
    threshold: float | None = None  # practical threshold of timed metrics, every case (beats `thresholds`)
    old_keys: tuple[str, ...] = ()  # older names of keys found in the file (`budget_s`): the CLI says so

    def old_key_notes(self) -> list[str]:
        """One line per older key name the file uses, with its name now."""
        keys = by_config_key()
        return [f"warning: {self.source}: key {k} is deprecated and will be removed in the next release; "
                f"write {keys[k].config}." for k in self.old_keys]  # fmt: skip


def configured_threshold(thresholds: Mapping[str, Mapping[str, float]], case_id: str, metric: str) -> float | None:
    """The configured practical threshold for one case and metric, or None.

    Patterns are tried in file order and a later match overrides an earlier one; within a pattern an exact
    metric name (`latency.median`) beats its family (`latency`).
    """
    found: float | None = None
    family = metric.split(".", 1)[0]
    for pattern, by_metric in thresholds.items():
        if not case_pattern(pattern).matches(case_id):
            continue
        if metric in by_metric:
            found = by_metric[metric]
        elif family in by_metric:
            found = by_metric[family]
    return found


# ---- finding the file ----------------------------------------------------------------------------------------


def _has_tool_table(pyproject: Path) -> bool:
    try:  # bytes that are not UTF-8 elsewhere in a project's pyproject.toml are not perfci's business
        text = pyproject.read_bytes().decode("utf-8", "replace")
    except OSError:
        return False
    # a header that opens a tool.perfci table, whole or not: a broken one (`[tool.perfci` with no `]`) is then read
    # and refused as invalid TOML instead of the file being passed over in silence
    if re.search(r"^\s*\[\s*tool\s*\.\s*[\"']?perfci\b", text, re.MULTILINE) is not None:
        return True
    if "perfci" not in text:
        return False
    # no header, but perfci may still be a key of the tool table (`[tool]` then `perfci = ...`, or a dotted
    # `tool.perfci.rounds = 3`): read, and refused when it is not a table, rather than passed over in silence
    try:
        tool = tomllib.loads(text).get("tool")
    except tomllib.TOMLDecodeError:
        return False  # a broken file with no perfci header is not perfci's business
    return isinstance(tool, dict) and "perfci" in tool


def find_config(start: Path) -> Path | None:
    """`perfci.toml`, else a `pyproject.toml` with `[tool.perfci]`, in `start` or the closest folder above it; both
    in one folder are a ConfigError.

    The search stops at the first folder that has a `pyproject.toml` or a `.git` (the project's root).
    """
    for folder in (start.resolve(), *start.resolve().parents):
        pyproject = folder / PYPROJECT
        if (folder / CONFIG_FILE).is_file():
            if pyproject.is_file() and _has_tool_table(pyproject):  # one of them was ignored without a word
                raise ConfigError(
                    f"{folder / CONFIG_FILE} and [tool.perfci] in {pyproject} both configure perfci; perfci reads one "
                    "configuration.",
                    hint="move the settings into one of them",
                )
            return folder / CONFIG_FILE
        if pyproject.is_file():
            return pyproject if _has_tool_table(pyproject) else None
        if (folder / ".git").exists():
            return None
    return None


def load_config(
    path: Path | None = None,
    start: Path | None = None,
    *,
    metric_keys: Collection[str],
    absolute_keys: Collection[str] = (),
) -> Config:
    """Load and validate `path`, or the file `find_config(start or cwd)` finds; an empty Config if none.

    `metric_keys`: the metric names and families a threshold may name (metrics.registry.threshold_keys(); passed
    in because the registry lives above this core module); `absolute_keys`: those of them whose threshold is in
    the metric's own unit (metrics.registry.absolute_threshold_keys())."""
    if path is None:
        path = find_config(start or Path.cwd())
        if path is None:
            return Config()
    elif not path.is_file():
        raise ConfigError(f"{path}: configuration file not found.")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:  # TOML is UTF-8
        raise ConfigError(f"{path}: cannot read the configuration ({exc}).") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}.") from None
    if path.name == PYPROJECT:
        tool = data.get("tool", {})
        table = tool.get("perfci", {}) if isinstance(tool, dict) else {}
        if not isinstance(table, dict):
            where = _Where(path, text, "", frozenset(metric_keys)).where("tool", "perfci")
            raise ConfigError(f"{where}: tool.perfci must be a table ([tool.perfci]), got {table!r}.")
        return parse_config(
            table, path, text, prefix="tool.perfci.", metric_keys=metric_keys, absolute_keys=absolute_keys
        )
    return parse_config(data, path, text, prefix="", metric_keys=metric_keys, absolute_keys=absolute_keys)


# ---- validation ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Where:
    """Where a key lives, for messages: the file, its text and the prefix of the table."""

    source: Path
    text: str
    prefix: str
    metric_keys: frozenset[str]  # what a threshold may name: metric names and families
    # the keys among them whose threshold is absolute, in the metric's own unit (accuracy): not a fraction
    absolute_keys: frozenset[str] = frozenset()

    def line(self, *names: str) -> int | None:
        """Best effort: the line of the first `name =` (or `name]`), then of the next name after it, and so on."""
        pos = 0
        header = re.search(r"^\s*\[\s*tool\s*\.\s*perfci\s*[\].]", self.text, re.MULTILINE) if self.prefix else None
        if header:
            pos = header.start()
        found = None
        for name in names:
            esc = re.escape(name)
            m = re.compile(rf"(?<![\w\"'])(?:{esc}|\"{esc}\"|'{esc}')\s*[=\].]").search(self.text, pos)
            if m is None:
                break
            pos = found = m.start()
        return None if found is None else self.text.count("\n", 0, found) + 1

    def error(self, names: tuple[str, ...], problem: str, hint: str | None = None) -> ConfigError:
        """`names`: the key path, e.g. ("thresholds", "kernels.*", "latency")."""
        key = ".".join(n if re.fullmatch(r"[A-Za-z0-9_-]+", n) else repr(n) for n in names)
        return ConfigError(f"{self.where(*names)}: key {self.prefix}{key}: {problem}", hint)

    def where(self, *names: str) -> str:
        """`file:line` of the key path (`file` alone where the line is not found)."""
        line = self.line(*names)
        return f"{self.source}:{line}" if line else f"{self.source}"


def _is_number(value: object) -> bool:
    """A finite number (TOML has `nan` and `inf`: refused wherever a number is read)."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**63


def _str_list(w: _Where, key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise w.error((key,), f"must be a list of strings, got {value!r}.")
    return tuple(value)


def _option(w: _Where, key: str, option: Option, value: object) -> Any:
    """A value held to its row of the options table (perfci/options.py): the same bounds as the flags'."""
    if option.kind == "fraction" and (isinstance(value, str) or _is_number(value)):
        try:
            return parse_fraction(value)  # type: ignore[arg-type]
        except ValueError as exc:
            raise w.error((key,), f"{str(exc).rstrip('.')}.") from None
    problem = option.problem(value)
    if problem is not None:
        raise w.error((key,), f"must be {option.bounds_text()}, got {value!r}.")
    return float(value) if option.kind == "float" else value  # type: ignore[arg-type]


def _cpus(w: _Where, value: object) -> tuple[int, ...]:
    if isinstance(value, str):
        try:
            return parse_cpu_list(value)
        except ValueError as exc:
            raise w.error(("cpus",), f"{exc}.") from None
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_CPU for v in value)
    ):
        return tuple(sorted(set(value)))
    raise w.error(("cpus",), f'must be a CPU list like "2-3" or a list of CPU numbers, got {value!r}.')


def _paths(w: _Where, value: object, key: str = "paths") -> tuple[Path, ...]:
    out = []
    for i, raw in enumerate(_str_list(w, key, value)):
        if "\0" in raw:
            raise w.error((key,), f"{key}[{i}] {raw!r} holds a NUL character.")
        p = Path(raw)
        p = p if p.is_absolute() else w.source.parent / p
        if not p.exists():
            raise w.error((key,), f"{key}[{i}] {raw!r} does not exist (looked for {p.resolve()}).")
        out.append(p)
    return tuple(out)


def _devices(w: _Where, value: object) -> tuple[str, ...]:
    devices = _str_list(w, "devices", value)
    for d in devices:
        if not DEVICE_RE.match(d):
            raise w.error(("devices",), f"{d!r} is not a device name perfci runs on: 'cpu', 'cuda' or 'cuda:N'.")
    return devices


def _thresholds(w: _Where, value: object) -> dict[str, dict[str, float]]:
    if not isinstance(value, dict):
        raise w.error(
            ("thresholds",), 'must be a table: pattern -> {metric = fraction}, e.g. "kernels.*" = {latency = 0.03}.'
        )
    out: dict[str, dict[str, float]] = {}
    for pattern, metrics in value.items():
        key = ("thresholds", pattern)
        try:
            case_pattern(pattern)
        except ValueError as exc:
            raise w.error(key, f"bad case pattern {pattern!r}: {exc}.") from None
        if not isinstance(metrics, dict):
            raise w.error(key, f"must be a table of metric = fraction, got {metrics!r}.")
        for metric, frac in metrics.items():
            if metric not in w.metric_keys:
                raise w.error(
                    (*key, metric), f"unknown metric {metric!r}.", hint=f"use one of {', '.join(sorted(w.metric_keys))}"
                )
            if isinstance(frac, dict):
                raise w.error((*key, metric), "is a table.", hint='quote a dotted metric name: "latency.median" = 0.02')
            try:
                if metric in w.absolute_keys:
                    out.setdefault(pattern, {})[metric] = _absolute_threshold(metric, frac)
                    continue
                if not isinstance(frac, str) and not _is_number(frac):
                    raise ValueError(f"must be {THRESHOLD.bounds_text()}, got {frac!r}")
                out.setdefault(pattern, {})[metric] = parse_fraction(frac)
            except ValueError as exc:
                raise w.error((*key, metric), f"{str(exc).rstrip('.')}.") from None
        out.setdefault(pattern, {})
    return out


def _absolute_threshold(metric: str, value: object) -> float:
    """An absolute threshold (accuracy's): a finite number from 0 up in the metric's own unit, with no upper bound
    (`accuracy.max_abs = 2` is a fair bound); ValueError otherwise. A percentage is refused, not read as a fraction:
    `1%` of what? The relative fractions' rule ("2 is above 1: write 2%") does not apply here."""
    said = f"the threshold of {metric} is absolute, in the metric's own unit: write a number such as 0.002"
    if isinstance(value, str) and value.strip().endswith("%"):
        raise ValueError(f"{value!r} is a percentage, but {said}")
    number: float | None = None
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    elif _is_number(value):
        number = float(value)  # type: ignore[arg-type]
    if number is None or not math.isfinite(number) or number < 0:
        raise ValueError(f"{value!r} is not a number from 0 up; {said}")
    return number


# keys read by their own function; every other key is held to its row of the options table
_READERS: dict[str, Callable[[_Where, object], Any]] = {
    "paths": _paths,
    "pytest": lambda w, v: _paths(w, v, "pytest"),
    "suites": lambda w, v: _str_list(w, "suites", v),
    "devices": _devices,
    "thresholds": _thresholds,
    "cpus": _cpus,
}
# the options held to their rows' bounds and choices (the GPU modes: the row's choices are the profilers' modes)
_CHECKED = {o.name for o in (ROUNDS, THREADS, CASE_TIMEOUT, ROUND_TIME, THRESHOLD, FAIL_ON, GPU_MODE)}


def _read(w: _Where, key: str, value: object) -> tuple[str, Any]:
    """A key's field of Config and its checked value."""
    option = by_config_key()[key]
    assert option.config is not None
    if key in _READERS:
        return option.config, _READERS[key](w, value)
    if option.name in _CHECKED or option.kind in ("bool", "text"):
        return option.config, _option(w, key, option, value)
    return option.config, value


def parse_config(
    data: Mapping[str, Any],
    source: Path,
    text: str = "",
    prefix: str = "",
    *,
    metric_keys: Collection[str],
    absolute_keys: Collection[str] = (),
) -> Config:
    """Validate a parsed TOML table; ConfigError names the file, the line (when found) and the key."""
    w = _Where(source, text, prefix, frozenset(metric_keys), frozenset(absolute_keys))
    values: dict[str, Any] = {}
    keys = by_config_key()
    _one_name_each(w, data)
    for key, value in data.items():
        if key not in keys:
            close = difflib.get_close_matches(key, list(keys), n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(sorted(keys))}"
            raise w.error((key,), "unknown key.", hint)
        field_name, values[field_name] = _read(w, key, value)
    old = tuple(k for k in data if k != keys[k].config)
    return Config(source=source, **values, old_keys=old)


def _one_name_each(w: _Where, data: Mapping[str, Any]) -> None:
    """A ConfigError when a setting is given under two of its names (`round_time_s` and its older name
    `budget_s`): which one won depended on their order in the file."""
    for option in OPTIONS:
        given = [k for k in (option.config, *option.config_aliases) if k is not None and k in data]
        if len(given) > 1:
            names = " and ".join(f"{w.prefix}{k}" for k in given)
            older = ", ".join(given[1:])
            raise ConfigError(
                f"{w.where(given[-1])}: keys {names}: both set {option.config} ({older} is its older name).",
                hint=f"keep {w.prefix}{option.config} alone",
            )
