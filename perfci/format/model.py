"""The data model: the results format's objects as msgspec Structs, plus the in-memory `CaseSpec` and `Comparison`.

Each object of the results and comparison files is one Struct class here, and that class is the format's one
definition: its fields and their annotations (bounds as `msgspec.Meta`: a sample's range, a count's minimum, a
time's shape) are what perfci/format/codec.py checks on reading and on writing, what the worker protocol
(perfci/engine/protocol.py) carries, and what the published JSON Schema is generated from. An object is closed (an
unknown key is refused). An open object (a runner's fingerprint, a round's telemetry, settings) keeps every key it
is given; where perfci reads some of its keys, a TypedDict names them (`FingerprintKeys`, `TelemetryKeys`) and the
owning Struct checks their types when it is made (`__post_init__`, run by msgspec on decoding too).

The Structs also answer `dataclasses.replace`, `fields` and `asdict` (`dataclass_api`), so code written for the
frozen dataclasses they replaced reads the same."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from itertools import repeat
from operator import truediv
from typing import Annotated, Any, ClassVar, Literal, TypedDict, TypeVar

import msgspec
from msgspec import Meta

S = TypeVar("S", bound=type[msgspec.Struct])

ParamValue = str | int | float | bool

# Bounds of the format. A timed sample lies between a picosecond and 10^7 s (116 days): outside, the file is
# corrupt, and the ratio of two runs' times could overflow a float.
MIN_SECONDS = 1e-12
MAX_SECONDS = 1e7  # a timed sample of at most 116 days
Seconds = Annotated[float, Meta(ge=MIN_SECONDS, le=MAX_SECONDS, description="A timed sample, in seconds.")]
Count = Annotated[int, Meta(ge=0)]
NonNegative = Annotated[float, Meta(ge=0)]
Fraction = Annotated[float, Meta(ge=0, le=1)]
NonEmpty = Annotated[str, Meta(min_length=1)]
UtcTime = Annotated[str, Meta(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$")]
ErrorKind = Literal["raised", "crash", "timeout", "oom", "skipped", "infrastructure", "check"]


def sample_seconds(seconds: float) -> float:
    """A measured time as a sample the format holds: a clock that reads 0 (or a device busy for less than a
    picosecond) gives the format's smallest sample, MIN_SECONDS."""
    return max(seconds, MIN_SECONDS)


class FingerprintKeys(TypedDict, total=False):
    """The keys of a runner's fingerprint that perfci reads."""

    os: str | None
    machine: str | None
    python: str | None
    cpu_model: str | None
    cpu_physical_cores: Count | None
    cpu_logical_cores: Count | None
    cpu_affinity_cores: Count | None
    memory_total_bytes: float | None
    libraries: dict[str, str | None]
    gpus: list[dict[str, Any]]
    gpu_driver: str | None
    cuda_driver: str | None
    gpu_note: str | None
    peaks: dict[str, Any]


class TelemetryKeys(TypedDict, total=False):
    """The keys of a round's telemetry that perfci reads."""

    timer: str
    timer_overhead_s: float | None
    work_sources: dict[str, str]
    minor_faults_per_call: float | None
    memory_host_bytes: NonNegative | None
    memory_device_bytes: NonNegative | None
    nvml_process_bytes: NonNegative | None
    energy_per_call_j: float | None
    reference_per_call_s: list[Seconds]
    throttle_flagged: Count | None
    throttle_dropped: Count | None
    sustained: dict[str, Any]
    notes: dict[str, Any]
    cpu_wait: Fraction | None
    cpu_pressure: Fraction | None
    cpu_steal: Fraction | None
    speed_probe_s: list[Seconds]


def _keys_schema(keys: type) -> dict[str, Any]:
    """The JSON Schema of an open object whose named keys are `keys`' (a TypedDict of plain types)."""
    _, defs = msgspec.json.schema_components([keys])
    schema: dict[str, Any] = defs[keys.__name__]
    return schema


# An open object: every key kept; the keys its TypedDict names are checked by the Struct that holds it.
Fingerprint = Annotated[dict[str, Any], Meta(extra_json_schema=_keys_schema(FingerprintKeys))]
Telemetry = Annotated[dict[str, Any], Meta(extra_json_schema=_keys_schema(TelemetryKeys))]


def check_known_keys(obj: dict[str, Any], keys: type, name: str) -> None:
    """Raise ValueError (as msgspec words a refusal, with the place under `name`) where a key that `keys` names has
    a value of another type. msgspec turns it into a ValidationError at the object's place when decoding."""
    try:
        msgspec.convert(obj, keys)
    except msgspec.ValidationError as exc:
        reason, found, where = str(exc).rpartition(" - at `$")
        if not found:
            reason, where = str(exc), "`"
        raise ValueError(f"{reason} - at `$.{name}{where}") from None


def dataclass_api(cls: S) -> S:
    """`cls` (a Struct) made to answer `dataclasses.replace`, `fields`, `is_dataclass` and `asdict`: the fields are
    listed, by name, as a dataclass lists them. For code written for the frozen dataclasses the model used to be;
    msgspec itself reads the Struct."""
    names = dataclasses.make_dataclass(cls.__name__, cls.__struct_fields__, frozen=True)
    cls.__dataclass_fields__ = names.__dataclass_fields__  # type: ignore[attr-defined]
    return cls


class Record(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Base of the format's objects: frozen, and closed (a file's unknown key is refused)."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]


class Direction(StrEnum):
    LOWER = "lower"
    HIGHER = "higher"


class CaseStatus(StrEnum):
    OK = "ok"
    ERROR = "error"
    SKIPPED = "skipped"  # the case cannot run on this runner (e.g. no triton); not a failure


class Verdict(StrEnum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    SLOWER = "slower"  # a change established (interval excludes no change) but below the practical threshold
    FASTER = "faster"
    # memory (a size, compared by the tolerance rule): a certain change below the practical threshold, as
    # slower/faster are for timed metrics (docs/compare.md)
    GREW = "grew"
    SHRANK = "shrank"
    UNCHANGED = "unchanged"  # equivalence established: the interval lies inside +- the practical threshold
    INCONCLUSIVE = "inconclusive"
    NEW = "new"
    MISSING = "missing"
    ERROR = "error"


BELOW_THRESHOLD_WORSE = (Verdict.SLOWER, Verdict.GREW)  # what `fail_on = "slower"` adds to regressions


# control characters (C0, DEL, C1): an id holding ESC [2J cleared the terminal of whoever read the log, and one
# holding a newline split its row over two lines; in an id they are written as escapes (`\x1b`, `\n`)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # a message's newlines and tabs stay


def _escaped(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def printable(text: str, lines: bool = False) -> str:
    """`text` with its control characters written as escapes (`\x1b`, `\n`), for a terminal or a log line;
    `lines`: a message's newlines and tabs kept."""
    pattern = _CONTROL_BUT_LINES if lines else _CONTROL
    return pattern.sub(_escaped, text) if pattern.search(text) else text


def format_case_id(workload: str, params: dict[str, ParamValue], device: str) -> str:
    """`<file stem>.<name>[k=v,...]@<device>`; parameters in declaration order; control characters as escapes."""
    inner = ",".join(f"{k}={v}" for k, v in params.items())
    return printable(f"{workload}[{inner}]@{device}" if inner else f"{workload}@{device}")


@dataclass(frozen=True)
class CaseSpec:
    """One workload with one set of parameters on one device (in memory only: a results file holds its fields flat,
    in `CaseResult`)."""

    workload: str
    params: dict[str, ParamValue]
    device: str
    source: str = ""
    tags: tuple[str, ...] = ()
    suite: str = ""

    @cached_property
    def id(self) -> str:
        """Computed once per spec (a frozen dataclass: `dataclasses.replace` makes a new spec, with its own id)."""
        return format_case_id(self.workload, self.params, self.device)


@dataclass_api
class KernelTime(Record, frozen=True, gc=False):
    """One kernel (or copy, or set) of a call, by name: its median device time per call and launches per call."""

    name: NonEmpty
    per_call_s: NonNegative
    count: NonNegative


@dataclass_api
class DeviceTime(Record, frozen=True, gc=False):
    """A round's device clock (results format 3; profilers/device_time.py): per profiled call, the GPU's busy
    time (the union of the intervals of the call's kernels, copies and sets, from the GPU's own timestamps).

    `source` names where the timestamps came from ("cupti": CUPTI activity records through torch.profiler);
    figures of different sources are not compared. `kernels` is the call's activity count (the mode over the
    calls); `dropped_calls` are profiled calls left out because they held fewer records than that (records
    dropped at a profiling session's start) or none; `unstable` when the counts of the kept calls still differ.
    `top` lists the activities with the most device time per call."""

    source: NonEmpty
    samples: Annotated[tuple[Seconds, ...], Meta(min_length=1)]
    kernels: Count
    dropped_calls: Count = 0
    unstable: bool = False
    top: tuple[KernelTime, ...] = ()


@dataclass_api
class Round(Record, frozen=True, dict=True):  # dict=True: room for the per-call times (`cached_property`)
    """One worker process's measurement of one case: raw sample times (seconds per sample of `iterations` calls)."""

    index: Count
    pid: int
    iterations: Annotated[int, Meta(ge=1)]
    samples: Annotated[tuple[Seconds, ...], Meta(min_length=1)]
    warmup_s: NonNegative
    stop_reason: str
    threads: int
    peak_rss_bytes: int | None = None
    rss_increase_bytes: int | None = None
    peak_device_bytes: int | None = None
    telemetry: Telemetry = {}
    device: DeviceTime | None = None  # CUDA cases: the device clock (results format 3)

    def __post_init__(self) -> None:
        if self.telemetry:
            check_known_keys(self.telemetry, TelemetryKeys, "telemetry")

    @cached_property  # read by every per-round metric value (metrics/registry.py): computed once per round
    def per_call(self) -> tuple[float, ...]:
        return tuple(map(truediv, self.samples, repeat(self.iterations)))  # s / iterations each, in C

    @cached_property  # the medians and quantiles of a round's metrics (metrics/registry.py) read it: sorted once
    def sorted_per_call(self) -> tuple[float, ...]:
        # the samples sorted, then divided: dividing by the (positive) iteration count keeps their order, so these
        # are `sorted(per_call)` without making `per_call` (the report's charts read only this)
        return tuple(map(truediv, sorted(self.samples), repeat(self.iterations)))


@dataclass_api
class Metric(Record, frozen=True, gc=False):
    """A derived quantity with unit, direction and its spread (an interval at `confidence`)."""

    name: str
    unit: str
    direction: Direction
    value: float
    low: float | None = None
    high: float | None = None
    confidence: float | None = None
    note: str = ""  # why the value is not to be trusted (e.g. bandwidth above the measured peak); "" if none


@dataclass_api
class CaseError(Record, frozen=True, gc=False):
    kind: ErrorKind
    message: str
    round_index: int | None = None


@dataclass_api
class CaseResult(Record, frozen=True, dict=True):
    """One case's outcome. The spec's fields are held flat, as a results file holds them (`spec` rebuilds it);
    `CaseResult.of` makes one from a spec."""

    id: NonEmpty
    workload: NonEmpty
    params: dict[str, ParamValue]
    device: NonEmpty
    status: CaseStatus
    rounds: tuple[Round, ...]
    metrics: tuple[Metric, ...]
    errors: tuple[CaseError, ...]
    source: str = ""
    suite: str = ""
    tags: tuple[str, ...] = ()
    flops: float | None = None
    bytes: float | None = None

    @classmethod
    def of(
        cls,
        spec: CaseSpec,
        status: CaseStatus,
        rounds: tuple[Round, ...] = (),
        metrics: tuple[Metric, ...] = (),
        errors: tuple[CaseError, ...] = (),
        flops: float | None = None,
        bytes: float | None = None,
    ) -> CaseResult:
        return cls(
            id=spec.id,
            workload=spec.workload,
            params=spec.params,
            device=spec.device,
            status=status,
            rounds=rounds,
            metrics=metrics,
            errors=errors,
            source=spec.source,
            suite=spec.suite,
            tags=spec.tags,
            flops=flops,
            bytes=bytes,
        )

    @cached_property
    def spec(self) -> CaseSpec:
        return CaseSpec(self.workload, self.params, self.device, self.source, self.tags, self.suite)

    def metric(self, name: str) -> Metric | None:
        return self._metrics_by_name.get(name)

    @cached_property
    def _metrics_by_name(self) -> dict[str, Metric]:
        by_name: dict[str, Metric] = {}
        for m in self.metrics:
            by_name.setdefault(m.name, m)  # the first of a name, as a scan would find it
        return by_name


@dataclass_api
class GitInfo(Record, frozen=True, gc=False):
    commit: str | None
    branch: str | None
    dirty: bool | None


@dataclass_api
class RunResult(Record, frozen=True, dict=True):
    """One run: the body of a results file (perfci/format/schema.py adds the header)."""

    run_id: NonEmpty
    started_at: UtcTime
    finished_at: UtcTime
    fingerprint: Fingerprint
    git: GitInfo | None
    settings: dict[str, Any]
    cases: tuple[CaseResult, ...]

    def __post_init__(self) -> None:
        check_known_keys(self.fingerprint, FingerprintKeys, "fingerprint")

    def case(self, case_id: str) -> CaseResult | None:
        """The case of this id (the first, should a file repeat one), from an index built once per run."""
        return self.case_index.get(case_id)

    @cached_property
    def case_index(self) -> dict[str, CaseResult]:
        """Cases by id, built on first use: every lookup after that costs O(1), so comparing, reporting and
        merging stay linear in the number of cases."""
        index: dict[str, CaseResult] = {}
        for c in self.cases:
            index.setdefault(c.id, c)
        return index


@dataclass_api
class MetricComparison(Record, frozen=True, gc=False):
    """The decision for one case and one metric."""

    case_id: NonEmpty
    metric: NonEmpty
    verdict: Verdict
    unit: str = ""
    baseline: float | None = None
    candidate: float | None = None
    ratio: float | None = None
    ratio_low: float | None = None
    ratio_high: float | None = None
    threshold: float | None = None
    note: str = ""
    # `ratio` is candidate / baseline of the metric's value.
    direction: Direction = Direction.LOWER  # which way is better for this metric
    method: Literal["paired", "unpaired", "tolerance", ""] = ""  # "": no statistics (new, missing, error)
    confidence: float | None = None  # of the one-sided bound (and the two-sided interval ratio_low..ratio_high)
    bound: float | None = None  # one-sided confidence bound of the ratio on the "worse" side of the verdict
    noise: float | None = None  # standard error of log(ratio): the spread an A/A comparison would show
    n_baseline: Count | None = None  # rounds (unpaired) or pairs (paired) behind the estimate
    n_candidate: Count | None = None
    expected: str = ""  # reason of a declared expected change that covers this regression (gate passes)
    # minimum detectable change (fraction, 0.011 = 1.1%) at 80% power, one-sided at 1 - alpha,
    # for this row's standard error and number of pairs/rounds; None for rows without statistics
    mdc: float | None = None


@dataclass(frozen=True)
class Comparison:
    """A comparison in memory (its file, `perfci/format/comparison.py`, holds its rows and a summary)."""

    baseline_label: str
    candidate_label: str
    rows: tuple[MetricComparison, ...]
    warnings: tuple[str, ...] = ()
    mode: str = "unpaired"  # unpaired (two result files) | paired (same-machine A/B, rounds in pairs)
    baseline_run: dict[str, Any] = field(default_factory=dict)  # run_id, git, fingerprint of each side
    candidate_run: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)  # decision settings used (alpha, thresholds, looks)

    @property
    def failing(self) -> tuple[MetricComparison, ...]:
        """Regressions not covered by a declared expected change, and `missing` rows not allowed: these fail the
        gate. `slower` (and `grew`) rows fail it only when the settings say so (`fail_on = "slower"`, see
        `failing_on`)."""
        return self.failing_on(str(self.settings.get("fail_on", "regression")))

    def failing_on(self, fail_on: str = "regression") -> tuple[MetricComparison, ...]:
        """The rows that fail a gate set to `fail_on` ("regression", or "slower": also the certain changes for the
        worse below the threshold, `slower` rows and memory's `grew`)."""
        fails = (Verdict.REGRESSION, *BELOW_THRESHOLD_WORSE) if fail_on == "slower" else (Verdict.REGRESSION,)
        # a baseline case with no candidate fails too, unless allowed (`expected` says why: compare/coverage.py)
        return tuple(r for r in self.rows if r.verdict in (*fails, Verdict.MISSING) and not r.expected)
