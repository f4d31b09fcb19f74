"""The worker protocol: every message between the runner side (supervisor, runner, lockstep) and a worker process.

One message is one line of JSON: an object whose `type` names the message, plus the fields of its dataclass here.

- runner -> worker, on the worker's stdin: a `Job` (first line); in lockstep mode then `Sample` / `Finish` commands.
- worker -> runner, on the worker's protocol stream: `Ready`, then per case `Start` ... `Idle` (a step went well),
  `Error` or `Result`; in lockstep mode `Prepared` after set-up and one `Sampled` per `Sample`; `Done` at the end.
- supervisor -> runner, never on the wire: `WorkerFailed` (a worker died with no case in flight) and `Error`s it
  makes up for the case in flight when a worker crashed, hung, ran out of memory or sent a malformed message.

`encode()` gives the line (without its newline); `decode` / `decode_event` / `decode_command` / `decode_job` read
one back and raise `ProtocolError`, and only that, on anything that is not a valid message of the expected kind.
"""

from __future__ import annotations

import functools
import json
import types
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from perfci.format.model import Round

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# Environment variable of a worker started ahead of its job (engine/runner.py `prestart`): "torch" makes it
# import torch while it waits for the job on stdin.
PRELOAD_VAR = "PERFCI_PRELOAD"
HEAP_PAD_VAR = "PERFCI_HEAP_PAD"  # bytes the worker allocates and keeps before anything else (worker.shift_heap)

ErrorKind = Literal["raised", "check", "oom", "skipped", "crash", "timeout"]


class ProtocolError(ValueError):
    """A line that is not a valid protocol message: not JSON, an unknown type, a missing, unknown or ill-typed
    field, or a message of the wrong kind for where it was read."""


@dataclass(frozen=True)
class Message:
    """Base of every message; `TYPE` is its tag on the wire."""

    TYPE: ClassVar[str] = ""

    def encode(self) -> str:
        """This message as one line of JSON (no trailing newline)."""
        return json.dumps({"type": self.TYPE, **asdict(self)}, separators=(",", ":"))


# --- runner -> worker ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobCase:
    """One case of a job: where its workload is and how to call it. `steady_clock`: "device" when the case's
    verdict rests on its device clock (earlier rounds found it, profilers/device_time.rests_on_device): the round
    profiles more calls and takes fewer latency samples; "" otherwise."""

    id: str
    source: str
    workload: str
    params: dict[str, Any]
    device: str
    steady_clock: str = ""


@dataclass(frozen=True)
class Job(Message):
    """What a worker measures: its first line on stdin."""

    TYPE: ClassVar[str] = "job"
    cases: tuple[JobCase, ...]
    round_index: int
    seed: int = 0
    threads: int = 1
    timing: dict[str, Any] = field(default_factory=dict)  # TimingSettings fields (the workload's own win)
    cpu_affinity: tuple[int, ...] | None = None
    slices: int = 1
    lockstep: bool = False  # then commands follow on stdin (perfci/engine/lockstep.py)
    parent_pid: int = 0  # the worker exits when this process is gone


@dataclass(frozen=True)
class Sample(Message):
    """Lockstep: `rewarm` untimed calls, then `n` samples of `case`; answered by `Sampled`. `iterations` (when > 0):
    calls per sample, the count both sides of the pair agreed on (the larger of their calibrated counts)."""

    TYPE: ClassVar[str] = "sample"
    case: str
    n: int = 1
    rewarm: int = 0
    iterations: int = 0


@dataclass(frozen=True)
class Finish(Message):
    """Lockstep: stop sampling; the worker finishes its cases and sends their results, then `Done`."""

    TYPE: ClassVar[str] = "finish"


# --- worker -> runner ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ready(Message):
    """The worker read its job and is about to set up the cases."""

    TYPE: ClassVar[str] = "ready"


@dataclass(frozen=True)
class Start(Message):
    """A step of `case` is in flight: if the worker dies or hangs now, this case is to blame."""

    TYPE: ClassVar[str] = "start"
    case: str


@dataclass(frozen=True)
class Idle(Message):
    """The step in flight ended well; no case is in flight."""

    TYPE: ClassVar[str] = "idle"


@dataclass(frozen=True)
class Prepared(Message):
    """Lockstep: set-up is over; these cases are ready to sample. `iterations`: each case's calibrated calls per
    sample, so that the driver can give both sides of a pair the same count."""

    TYPE: ClassVar[str] = "prepared"
    cases: tuple[str, ...]
    iterations: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Sampled(Message):
    """Lockstep: the answer to a `Sample`. `failed`: the case raised (its `Error` came first); `missing`: the
    worker has no such case (it failed in set-up)."""

    TYPE: ClassVar[str] = "sampled"
    case: str
    elapsed_s: float
    failed: bool = False
    missing: bool = False


@dataclass(frozen=True)
class Result(Message):
    """One case's round, as the model's `Round` (the worker leaves its index at 0; the runner, which knows the
    round, sets it), and the work per call measured around it."""

    TYPE: ClassVar[str] = "result"
    case: str
    flops: float | None
    bytes: float | None
    measured: Round

    def round(self, index: int) -> Round:
        return replace(self.measured, index=index)


@dataclass(frozen=True)
class Error(Message):
    """`case` failed; it is not measured again in this run."""

    TYPE: ClassVar[str] = "error"
    case: str
    kind: ErrorKind
    message: str


@dataclass(frozen=True)
class Done(Message):
    """The worker finished its job and is about to exit."""

    TYPE: ClassVar[str] = "done"


@dataclass(frozen=True)
class WorkerFailed(Message):
    """Made by the supervisor, never sent by a worker: the worker died with no case in flight."""

    TYPE: ClassVar[str] = "worker_failed"
    message: str


Command = Sample | Finish
WorkerEvent = Ready | Start | Idle | Prepared | Sampled | Result | Error | Done
Event = WorkerEvent | WorkerFailed  # what the supervisor hands to the runner
AnyMessage = Job | Command | Event

COMMANDS: tuple[type[Sample], type[Finish]] = (Sample, Finish)
WORKER_EVENTS = (Ready, Start, Idle, Prepared, Sampled, Result, Error, Done)
MESSAGES: dict[str, type[AnyMessage]] = {m.TYPE: m for m in (Job, *COMMANDS, *WORKER_EVENTS, WorkerFailed)}

D = TypeVar("D", bound="DataclassInstance")


def decode(line: str | bytes) -> AnyMessage:
    """The message on `line` (one JSON object; surrounding white space ignored)."""
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError):  # JSONDecodeError is a ValueError
        raise ProtocolError(f"not JSON: {_excerpt(line)}") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"not a JSON object: {_excerpt(line)}")
    tag = data.pop("type", None)
    cls = MESSAGES.get(tag) if isinstance(tag, str) else None
    if cls is None:
        raise ProtocolError(f"unknown message type {tag!r}: {_excerpt(line)}")
    return _build(cls, data, tag)


def decode_event(line: str | bytes) -> WorkerEvent:
    """A message a worker may send."""
    message = decode(line)
    if not isinstance(message, WORKER_EVENTS):
        raise ProtocolError(f"a worker does not send {message.TYPE!r} messages")
    return message


def decode_command(line: str | bytes) -> Command:
    """A lockstep command."""
    message = decode(line)
    if not isinstance(message, COMMANDS):
        raise ProtocolError(f"expected a command ({', '.join(c.TYPE for c in COMMANDS)}), got {message.TYPE!r}")
    return message


def decode_job(line: str | bytes) -> Job:
    message = decode(line)
    if not isinstance(message, Job):
        raise ProtocolError(f"expected a job, got {message.TYPE!r}")
    return message


def _excerpt(line: str | bytes, limit: int = 120) -> str:
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    text = text.strip()
    return repr(text if len(text) <= limit else text[:limit] + "...")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _build(cls: type[D], data: dict[str, Any], where: str) -> D:
    """`cls` from the JSON object `data`, every field checked against its annotation."""
    hints = _hints(cls)
    unknown = sorted(set(data) - set(hints))
    if unknown:
        raise ProtocolError(f"{where}: unknown field(s) {', '.join(unknown)}")
    values: dict[str, Any] = {}
    for f in fields(cls):
        if f.name in data:
            values[f.name] = _convert(data[f.name], hints[f.name], f"{where}.{f.name}")
        elif f.default is MISSING and f.default_factory is MISSING:
            raise ProtocolError(f"{where}: missing field {f.name}")
    return cls(**values)


# field type -> the JSON values it accepts, and how to say so
_SCALARS: dict[Any, tuple[tuple[type, ...], str]] = {
    str: ((str,), "a string"),
    bool: ((bool,), "a boolean"),
    int: ((int,), "an integer"),
    float: ((int, float), "a number"),  # an int is a fine float (as for mypy), and is kept as it is
    type(None): ((type(None),), "null"),
}


def _convert(value: Any, tp: Any, where: str) -> Any:
    """`value` (parsed JSON) as type `tp`, or ProtocolError. JSON arrays become tuples."""
    if tp is Any:
        return value
    if tp in _SCALARS:
        accepted, expected = _SCALARS[tp]
        if not isinstance(value, accepted) or (isinstance(value, bool) and tp is not bool):  # True is no number
            raise ProtocolError(f"{where}: expected {expected}, got {_json_type(value)}")
        return value
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return _convert_union(value, get_args(tp), where)
    if origin is Literal:
        if not isinstance(value, str) or value not in get_args(tp):
            raise ProtocolError(f"{where}: {value!r} is not one of {', '.join(get_args(tp))}")
        return value
    return _convert_structure(value, tp, where)


def _convert_structure(value: Any, tp: Any, where: str) -> Any:
    """An array (tuple[X, ...]), an object (dict[str, Any]) or a nested message part (a dataclass)."""
    origin = get_origin(tp)
    if origin is tuple:
        if not isinstance(value, list):
            raise ProtocolError(f"{where}: expected an array, got {_json_type(value)}")
        item = get_args(tp)[0]
        return tuple(_convert(v, item, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is not dict and not (isinstance(tp, type) and is_dataclass(tp)):
        raise TypeError(f"{where}: no decoding for type {tp!r}")  # a field type this module does not handle: a bug
    if not isinstance(value, dict):
        raise ProtocolError(f"{where}: expected an object, got {_json_type(value)}")
    return value if origin is dict else _build(tp, value, where)


def _convert_union(value: Any, arms: tuple[Any, ...], where: str) -> Any:
    if value is None and type(None) in arms:
        return None
    others = [arm for arm in arms if arm is not type(None)]
    if len(others) == 1:
        return _convert(value, others[0], where)  # its error says what was expected
    for arm in others:
        try:
            return _convert(value, arm, where)
        except ProtocolError:
            continue
    raise ProtocolError(f"{where}: {_json_type(value)} matches none of its types")


def _json_type(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array"}
    if value is None:
        return "null"
    return names.get(type(value), "an object")
