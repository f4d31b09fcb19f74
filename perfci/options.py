"""The options table: every setting a user can give perfci, written once.

Each row says a setting's name, default, bounds, help text, `[tool.perfci]` key, environment variable and
flags. The CLI's typer options (perfci/cli/options.py), the API's request defaults and resolution
(perfci/api/settings.py: flag > environment > configuration > default), the engine's and the pytest plugin's
defaults, the configuration reader's checks (perfci/config.py) and docs/settings.md are all made from it.
Adding an option is one row here, then its use; `python -m perfci.options docs/settings.md` renews the page's table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from perfci.fractions import FRACTION_EXAMPLE, MAX_FRACTION, check_fraction, parse_fraction

KINDS = ("int", "float", "fraction", "bool", "text", "choice", "other")
DAY_S = 86_400.0
MAX_EXACT_FLOAT = 2**53  # integers up to this convert to a float exactly


@dataclass(frozen=True, kw_only=True)
class Option:
    """One setting. `kind` says how a value is checked: int, float, fraction (`3%` or `0.03`), bool, text, choice
    (one of `choices`), or other (a list, a path or a pattern, checked where it is read)."""

    name: str  # the setting's name in requests and code
    title: str  # what it is, for docs/settings.md
    help: str  # the flags' help text: one sentence, without the default
    kind: str = "other"
    flag: str | None = None  # the command-line flag (None: no flag)
    flags_doc: str | None = None  # how the docs show the flags, where there is more to say than `flag`
    default: Any = None  # None: computed where it is used (`default_text` says how)
    default_text: str | None = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False  # the value must be above `low`, not equal to it
    unit: str = ""  # "s": seconds
    choices: tuple[str, ...] = ()
    config: str | None = None  # the key in perfci.toml / [tool.perfci] (None: not configurable)
    config_aliases: tuple[str, ...] = ()  # older key names, still read
    env: str | None = None  # the environment variable (None: none)
    env_doc: str | None = None  # the variables the docs name, where they are read by a command of their own
    plugin_flag: str | None = None  # the pytest plugin's flag (None: not a plugin option)
    plugin_default: Any = None  # the plugin's default, where it differs from `default`
    deprecated_flags: tuple[str, ...] = ()  # older flags, still taken with a note on stderr for one release

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"option {self.name}: kind {self.kind!r} is not one of {', '.join(KINDS)}")

    def shown_default(self, plugin: bool = False) -> str:
        """The default as help texts and the docs show it."""
        value = self.plugin_default if plugin and self.plugin_default is not None else self.default
        if value is None or (self.default_text and not plugin):
            return self.default_text or "none"
        if isinstance(value, bool):
            return "on" if value else "off"
        return f"{value:g}" if isinstance(value, float) else str(value)

    def least(self) -> float:
        """The lower bound (ValueError where there is none)."""
        if self.low is None:
            raise ValueError(f"{self.name} has no lower bound")
        return self.low

    def most(self) -> float:
        """The upper bound (ValueError where there is none)."""
        if self.high is None:
            raise ValueError(f"{self.name} has no upper bound")
        return self.high

    def help_text(self, shown_default: bool = True, plugin: bool = False) -> str:
        """The help text with the default (`[default: 5]`), as every command shows it."""
        return f"{self.help} [default: {self.shown_default(plugin)}]." if shown_default else f"{self.help}."

    def bounds_text(self) -> str:
        """What a value must be, e.g. "an integer >= 2" or "a number > 0 and at most 3600 (seconds)"."""
        if self.kind == "fraction":
            top = f"{MAX_FRACTION:.0%}"
            return f"a fraction such as {FRACTION_EXAMPLE}, from 0 to {top} (a bare number above 1 is ambiguous)"
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind not in ("int", "float"):
            return "a non-empty string"
        what = "an integer" if self.kind == "int" else "a number"
        parts = [] if self.low is None else [f"{'>' if self.low_open else '>='} {self.low:g}"]
        if self.high is not None:  # an integer bound in full: 2^63 - 1 read "9.22337e+18"
            parts.append(f"at most {self.high}" if self.kind == "int" else f"at most {self.high:g}")
        unit = " (seconds)" if self.unit == "s" else ""
        return f"{what} {' and '.join(parts)}{unit}".rstrip()

    def problem(self, value: object) -> str | None:
        """None when `value` is of this option's kind and within its bounds; else "must be ..., not X"."""
        if self.kind == "fraction":
            try:
                parse_fraction(value) if isinstance(value, str) else check_fraction(value)  # type: ignore[arg-type]
            except ValueError as exc:
                return str(exc).rstrip(".")
            return None
        if not self._fits(value):
            return f"must be {self.bounds_text()}, not {value!r}"
        return None

    def _fits(self, value: object) -> bool:
        if self.kind == "bool":
            return isinstance(value, bool)
        if self.kind == "choice":
            return value in self.choices
        if self.kind == "text":
            return isinstance(value, str) and bool(value.strip())
        if self.kind == "other":
            return True
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or (self.kind == "int" and not isinstance(value, int)):
            return False
        if isinstance(value, int) and self.kind == "float" and abs(value) > MAX_EXACT_FLOAT:
            return False  # a number option's value becomes a float: one too large for it is refused, not overflowed
        v: float | int = value if isinstance(value, int) else float(value)  # type: ignore[arg-type]
        if isinstance(v, float) and not math.isfinite(v):
            return False  # an int is compared exactly: a huge one must not overflow a float
        if self.low is not None and (v <= self.low if self.low_open else v < self.low):
            return False
        return self.high is None or v <= self.high


# ---- the table -------------------------------------------------------------------------------------------------
# fmt: off
RUNNER = Option(name="runner", title="Runner class (names `baselines/<runner>.json`, the history store's runner)",
                help="Runner class (names baselines/<runner>.json)", kind="text", flag="--runner",
                default_text="$PERFCI_RUNNER, config, else derived from the fingerprint (`perfci env`)",
                config="runner", env="PERFCI_RUNNER")
DB = Option(name="db", title="History store URL", help="History store URL", kind="text", flag="--db",
            default_text="$PERFCI_DB, else sqlite:///.perfci/history.db", env="PERFCI_DB")
MEMORY_LIMIT = Option(name="memory_limit", title="Worker memory limit", help="Worker memory limit, e.g. 8GiB",
                      kind="text", flag="--memory-limit", flags_doc="`--memory-limit SIZE` (`run`, `ab`)",
                      default_text="$PERFCI_MEMORY_LIMIT, else half of RAM",
                      env="PERFCI_MEMORY_LIMIT")
PATHS = Option(name="paths", title="Workload paths", help="Workload file or folder (repeatable)",
               flags_doc="`PATHS` (`--path` for `ab`, `ci`)",
               default_text="`run`: the built-in default suite; `ab`, `ci`: the project's `perf/`, `benchmarks/`",
               config="paths")
PYTEST = Option(name="pytest", title="pytest files or folders whose `benchmark`/`perf` tests `ab` and `ci` measure",
                help="pytest file or folder whose benchmark and perf tests are measured as cases (repeatable)",
                flag="--pytest", flags_doc="`--pytest PATH` (`ab`, `ci`)", default_text="none", config="pytest")
SUITES = Option(name="suites", title="Suites", help="Suite to run (repeatable)", flag="--suite", config="suites")
DEVICES = Option(name="devices", title="Devices", help="Device to run on (cpu, cuda, cuda:1). Repeatable",
                 flag="--device", default_text="the devices present", config="devices")
ROUNDS = Option(name="rounds", title="Rounds per case (worker processes; in-process rounds in the pytest plugin)",
                help="Rounds per case: worker processes (in-process rounds in the pytest plugin), at least 2",
                kind="int", flag="--rounds", default=5, low=2, config="rounds", plugin_flag="--perfci-rounds")
THREADS = Option(name="threads", title="Threads per worker (torch/ORT intra-op; 0: the library's default)",
                 help="torch/ORT threads per worker (0: the library's default)", kind="int", flag="--threads",
                 default=1, low=0, high=4_096, config="threads", plugin_flag="--perfci-threads")
CPUS = Option(name="cpus", title="CPUs the workers are pinned to", help="Pin the workers to these CPUs, e.g. 3 or "
              "2-3 or 0,4-7", flag="--cpus", default_text="run: not pinned; ab: the last --threads CPUs",
              config="cpus")
SEED = Option(name="seed", title="Seed for inputs, round order and pair order", help="Seed for inputs and round "
              "order", kind="int", flag="--seed", default=0, low=0, high=2**63 - 1)
CASE_TIMEOUT = Option(name="case_timeout_s", title="Per-case time-out (s)", help="Per-case time-out in seconds",
                      kind="float", flag="--timeout", default=120.0, low=0, low_open=True, unit="s",
                      config="case_timeout_s")
ROUND_TIME = Option(name="round_time_s", title="Sampling time per case and round (s)",
                    help="Sampling time per case and round, seconds", kind="float", flag="--round-time",
                    flags_doc="`--round-time` (`run`, `ab`, `ci`; `--sample-budget`, its older name, is taken "
                    "as it; `run --budget` is taken with a deprecation note)", default=0.4, low=0, low_open=True,
                    high=3_600, unit="s",
                    config="round_time_s", config_aliases=("budget_s",), plugin_flag="--perfci-round-time",
                    plugin_default=0.2, deprecated_flags=("--budget", "--sample-budget", "--perfci-budget"))
SPEED_REFERENCE = Option(name="speed_reference", title="Speed reference", help="Time a fixed torch matmul before "
                         "each sample of CPU torch cases and report latency.vs_reference (steadier across jobs on a "
                         "shared CPU; docs/measurement.md)", kind="bool", flag="--speed-reference/--no-speed-reference",
                         default=False, config="speed_reference")
GPU_MODE = Option(name="gpu_mode", title="GPU timing mode of CUDA cases (a workload's own `gpu_mode` wins)",
                  help="How CUDA cases are timed: hot, cold, graph, sustained (back to back at the power and "
                  "thermal steady state) or sustained-cold (the same with the L2 flushed before each call; "
                  "docs/measurement.md). A workload's own choice wins", kind="choice", flag="--gpu-mode",
                  flags_doc="`--gpu-mode hot\\|cold\\|graph\\|sustained\\|sustained-cold` (`run`, `ab`)",
                  default="hot", choices=("hot", "cold", "graph", "sustained", "sustained-cold"),  # cuda_timing.MODES
                  config="gpu_mode")
THRESHOLD = Option(name="threshold", title="Practical threshold of timed metrics, every case",
                   help=f"Practical threshold for timed metrics: {FRACTION_EXAMPLE}", kind="fraction",
                   flag="--threshold",
                   default_text="the configured `thresholds`, else per metric and device (3% CPU, 1% GPU)",
                   config="threshold", plugin_flag="--perfci-threshold")
THRESHOLDS = Option(name="thresholds", title="Practical thresholds per case pattern and metric or family",
                    help="Practical thresholds per case pattern", default_text="3% CPU, 1% GPU, memory 1% + 1 MiB",
                    config="thresholds")
FAIL_ON = Option(name="fail_on", title="What fails the gate (slower: also established slowdowns below the "
                 "threshold, [compare.md](compare.md))", help="What fails the gate: 'regression', or 'slower' (also "
                 "established slowdowns below the threshold, and memory that grew below it)", kind="choice",
                 flag="--fail-on", flags_doc="`--fail-on regression\\|slower` (`run`, `compare`, `ab`)",
                 default="regression", choices=("regression", "slower"), config="fail_on",
                 plugin_flag="--perfci-fail-on")
JOB_NOISE = Option(name="job_noise", title="Cross-job noise of unpaired comparisons (sd of the log per-job shift)",
                   help="Cross-job noise, sd of the log per-job shift", kind="fraction", flag="--job-noise",
                   default_text="10% CPU, 3% GPU, 5% for in-process rounds", plugin_flag="--perfci-job-noise")
HISTORY_NOISE = Option(name="history_noise", title="Cross-job noise from history",
                       help="Take each case's cross-job noise from the history store (--db): the runs since its "
                       "last change point (upper 90% bound; 'perfci history noise' shows it); cases with fewer "
                       "than 10 keep the default", kind="bool", flag="--history-noise/--no-history-noise",
                       flags_doc="`--history-noise/--no-history-noise` (`--job-noise` beats a configured one)",
                       default=False, config="history_noise")
BUILD = Option(name="build_command", title="Build command for `ab`", help="Build command run in each checkout",
               kind="text", flag="--build", default_text="none", config="build_command")
AB_BUDGET = Option(name="ab_budget_s", title="Time budget of a whole A/B (`ab`, `ci`), s",
                   help="Time budget of the whole A/B, seconds", kind="float", flag="--budget", default=900.0,
                   low=0, low_open=True, high=7 * DAY_S, unit="s")
# Pairs of the first look when not given: a GPU case is decided on its device clock, whose rounds vary by
# 0.1-0.4% by process (H200, H100; docs/gpu.md), so a few pairs decide most of them; CPU cases on shared runners
# vary by percents per pair and need more pairs before the first decision. Five rather than four: with 3 degrees of
# freedom the t quantile (7.4 at 99.8%) kept A/As at a 0.3% spread unsettled in 35 of 60 twins (13 with five), and
# a second look costs a block's set-up; the fifth pair shares the first block's (1 + 4 at 4 pairs a block).
GPU_FIRST_LOOK = 5
CPU_FIRST_LOOK = 8
PAIRS = Option(name="pairs", title="A/B: pairs in the first look", help="Pairs in the first look", kind="int",
               flag="--pairs", default_text=f"{GPU_FIRST_LOOK} when every case is on a GPU, else {CPU_FIRST_LOOK}",
               low=2, high=10_000)
EXTRA = Option(name="extra", title="A/B: pairs added per further look (undecided cases)",
               help="Pairs added per further look (undecided cases)", kind="int", flag="--extra", default=6, low=1,
               high=10_000)
PAIRS_AT_ONCE = Option(name="pairs_at_once", title="A/B: pairs whose workers start and set up together (after the "
                       "first pair)", help="Pairs whose workers start and set up together, after the first pair (0: "
                       "one per 4 CPUs, as many as half the free memory holds)", kind="int", flag="--pairs-at-once",
                       default=0, low=0, high=64)
LOOKS = Option(name="looks", title="A/B: looks in all (alpha is split over them)", help="Looks in all (alpha is "
               "split over them)", kind="int", flag="--looks", default=3, low=1, high=100)
CI_ENVIRONMENT = Option(name="ci_environment", title="`perfci ci`: event, A/B base, step summary, outputs file",
                        help="", flags_doc="`--mode`, `--base`, `--step-summary`, `--github-output`",
                        default_text="auto: A/B on a pull request, else a run ([ci.md](ci.md))",
                        env_doc="`GITHUB_ACTIONS`, `GITHUB_EVENT_NAME`, `GITHUB_BASE_REF`, "
                        "`GITHUB_STEP_SUMMARY`, `GITHUB_OUTPUT`")
SHARD = Option(name="shard", title="Shard of the cases", help="Run only shard I of N", flag="--shard",
               flags_doc="`--shard I/N` (`run`, `ab`, `ci`)", default_text="all cases")
RESUME = Option(name="resume", title="Resume an interrupted run in `--out` (only the missing rounds; "
                "[reliability.md](reliability.md))", help="", kind="bool", flags_doc="`--resume` (`run`, `ab`)",
                default=False, default_text="off: measure from the start")
LOCK_CLOCKS = Option(name="lock_clocks", title="Lock the GPUs' SM clock for the run (restored afterwards; "
                     "[gpu.md](gpu.md))", help="Lock every GPU's SM clock at its base clock for the run and "
                     "restore it afterwards (NVML); refused in one line where the driver does not allow it",
                     kind="bool", flag="--lock-clocks", flags_doc="`--lock-clocks` (`run`, `ab`)", default=False)
ALLOW_MISSING = Option(name="allow_missing", title="Baseline cases with no candidate pass ([compare.md](compare.md))",
                       help="Let baseline cases with no candidate pass (by default each is a failing `missing` row; "
                       "cases left out on purpose, deselected, skipped or in another shard, are never missing)",
                       kind="bool", flag="--allow-missing", default=False, plugin_flag="--perfci-allow-missing",
                       flags_doc="`--allow-missing` (`compare`, `run`, `ab`, `ci`, `merge`), `--perfci-allow-missing`")
BASE_IMAGE = Option(name="base_image", title="Container image of the A/B's base side ([containers.md](containers.md))",
                    help="Container image the base side's workers run in (docs/containers.md)", kind="text",
                    flag="--base-image", default_text="none: workers run on the host")
HEAD_IMAGE = Option(name="head_image", title="Container image of the A/B's head side",
                    help="Container image the head side's workers run in", kind="text", flag="--head-image",
                    default_text="none: workers run on the host")
CONTAINER_RUNTIME = Option(name="container_runtime", title="Container runtime of an image A/B",
                           help="docker, podman, or the path of a runtime with docker's command line", kind="text",
                           flag="--container-runtime", default="docker")
RANK = Option(name="rank", title="How decision tables rank each model's configurations ([reports.md](reports.md))",
              help="How decision tables rank each model's configurations: 'time' (per item) or 'memory' (peak)",
              kind="choice", flag="--rank", flags_doc="`--rank time\\|memory` (`run`, `compare`, `report`)",
              default="time", choices=("time", "memory"))
MAX_MEMORY = Option(name="max_memory", title="Peak memory above which decision tables leave a configuration out",
                    help="Leave configurations whose peak memory is above this out of the decision tables' choice, "
                    "e.g. 2GiB", kind="text", flag="--max-memory", default_text="no limit",
                    flags_doc="`--max-memory SIZE` (`run`, `compare`, `report`)")
# fmt: on

OPTIONS: tuple[Option, ...] = (
    RUNNER, DB, MEMORY_LIMIT, PATHS, PYTEST, SUITES, DEVICES, ROUNDS, THREADS, CPUS, SEED, CASE_TIMEOUT, ROUND_TIME,
    SPEED_REFERENCE, GPU_MODE, THRESHOLD, THRESHOLDS, FAIL_ON, JOB_NOISE, HISTORY_NOISE, BUILD, AB_BUDGET, PAIRS,
    PAIRS_AT_ONCE, EXTRA, LOOKS, CI_ENVIRONMENT, SHARD, RESUME, LOCK_CLOCKS, ALLOW_MISSING, BASE_IMAGE, HEAD_IMAGE,
    CONTAINER_RUNTIME, RANK, MAX_MEMORY,
)  # fmt: skip


def by_config_key() -> dict[str, Option]:
    """Every configuration key (older names too) -> its option."""
    return {key: o for o in OPTIONS if o.config for key in (o.config, *o.config_aliases)}


# ---- docs/settings.md ------------------------------------------------------------------------------------------

TABLE_START = "<!-- options table: made from perfci/options.py by `python -m perfci.options docs/settings.md` -->"
TABLE_END = "<!-- end of the options table -->"


def _code(text: str | None) -> str:
    return f"`{text}`" if text else "—"


def _flags(o: Option) -> str:
    shown = o.flags_doc or _code(o.flag)
    if o.deprecated_flags:
        shown += " (older names, for one release: " + ", ".join(f"`{f}`" for f in o.deprecated_flags) + ")"
    return shown


def _bounds(o: Option) -> str:
    if o.kind in ("int", "float", "fraction"):
        return o.bounds_text()
    return f"one of {', '.join(o.choices)}" if o.kind == "choice" else "—"


def _default(o: Option) -> str:
    shown = o.shown_default()
    if o.plugin_flag and o.plugin_default is not None:
        shown += f" (pytest plugin: {o.shown_default(plugin=True)})"
    return shown


def options_table() -> str:
    """The Markdown table of every option, as docs/settings.md shows it."""
    rows = ["| Setting | Flag | pytest plugin | Environment | Configuration key | Default | Bounds |",
            "|---|---|---|---|---|---|---|"]  # fmt: skip
    for o in OPTIONS:
        keys = ", ".join(f"`{k}`" for k in (o.config, *o.config_aliases) if k) or "—"
        env = o.env_doc or _code(o.env)
        cells = (o.title, _flags(o), _code(o.plugin_flag), env, keys, _default(o), _bounds(o))
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def with_options_table(page: str) -> str:
    """`page` with the text between its table markers made afresh from the table."""
    head, start, rest = page.partition(TABLE_START)
    _, end, tail = rest.partition(TABLE_END)
    if not start or not end:
        raise ValueError(f"the page has no options table markers ({TABLE_START} ... {TABLE_END})")
    return f"{head}{TABLE_START}\n{options_table()}\n{TABLE_END}{tail}"


def main(argv: list[str]) -> int:
    """`python -m perfci.options PAGE`: renew the options table in PAGE (docs/settings.md)."""
    from pathlib import Path

    if len(argv) != 1:
        raise SystemExit("usage: python -m perfci.options docs/settings.md")
    page = Path(argv[0])
    page.write_text(with_options_table(page.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))


def resolve(option: Option, flag: Any, env: Mapping[str, str], configured: Any, source: object = None) -> Any:
    """One setting: `flag` > the option's environment variable > `configured` (its configuration key's value, read
    from `source`) > its default (None where the table has none), held to the option's bounds whichever of them it
    came from; ValueError naming where the value came from otherwise."""
    raw_env = env.get(option.env) if option.env else None
    value, where = flag, option.flag or option.name
    if value is None and raw_env:
        value, where = _env_value(option, raw_env), f"${option.env}"
    if value is None and configured is not None:
        value, where = configured, f"{source}: key {option.config}"
    if value is None:
        return option.default
    if (problem := option.problem(value)) is not None:
        raise ValueError(f"{where}: {problem}.")
    return float(value) if option.kind in ("float", "fraction") else value


def _env_value(option: Option, text: str) -> Any:
    """An environment variable's text as the option's kind (the text itself where it does not read as one: the
    bounds check then names the variable)."""
    try:
        return int(text) if option.kind == "int" else float(text) if option.kind == "float" else text
    except ValueError:
        return text
