"""The worker protocol: every message between the runner side (supervisor, runner, lockstep) and a worker process.

One message is one line of JSON: an object whose `type` names the message, plus the fields of its Struct here. The
messages are a tagged union of msgspec Structs (`type` is the tag); msgspec reads them with the same checks as the
results files: a `Result` carries the model's `Round`, with the format's bounds.

- runner -> worker, on the worker's stdin: a `Job` (first line); in lockstep mode then `Sample` / `Finish` commands.
- worker -> runner, on the worker's protocol stream: `Ready`, then per case `Start` ... `Idle` (a step went well),
  `Error` or `Result`; in lockstep mode `Prepared` after set-up, one `Sampled` per `Sample` and `Released`
  once its GPU work is over; `Done` at the end.
- supervisor -> runner, never on the wire: `WorkerFailed` (a worker died with no case in flight) and `Error`s it
  makes up for the case in flight when a worker crashed, hung, ran out of memory or sent a malformed message.

`encode()` gives the line (without its newline); `decode` / `decode_event` / `decode_command` / `decode_job` read
one back and raise `ProtocolError`, and only that, on anything that is not a valid message of the expected kind.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from perfci.format.model import Round

# Environment variable of a worker started ahead of its job (engine/runner.py `prestart`): "torch", or a file of
# module names, which it imports while it waits for the job on stdin (engine/preload.py).
PRELOAD_VAR = "PERFCI_PRELOAD"
HEAP_PAD_VAR = "PERFCI_HEAP_PAD"  # bytes the worker allocates and keeps before anything else (worker.shift_heap)

ErrorKind = Literal["raised", "check", "oom", "skipped", "crash", "timeout"]


class ProtocolError(ValueError):
    """A line that is not a valid protocol message: not JSON, an unknown type, a missing, unknown or ill-typed
    field, or a message of the wrong kind for where it was read."""


class Message(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="type"):
    """Base of every message; its tag (`type` on the wire) is set by each message class."""

    def encode(self) -> str:
        """This message as one line of JSON (no trailing newline)."""
        return msgspec.json.encode(self).decode()

    @property
    def type(self) -> str:
        """The message's tag, as the wire names it."""
        return tag_of(type(self))


def tag_of(cls: type[Message]) -> str:
    tag = cls.__struct_config__.tag
    assert isinstance(tag, str), cls
    return tag


# --- runner -> worker ------------------------------------------------------------------------------------------


class JobCase(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One case of a job: where its workload is and how to call it. `steady_clock`: "device" when the case's
    verdict rests on its device clock (earlier rounds found it, profilers/device_time.rests_on_device): the round
    profiles more calls and takes fewer latency samples; "" otherwise."""

    id: str
    source: str
    workload: str
    params: dict[str, Any]
    device: str
    steady_clock: str = ""


class Job(Message, frozen=True, tag="job"):
    """What a worker measures: its first line on stdin."""

    cases: tuple[JobCase, ...]
    round_index: int
    seed: int = 0
    threads: int = 1
    timing: dict[str, Any] = {}  # TimingSettings fields (the workload's own win)
    cpu_affinity: tuple[int, ...] | None = None
    slices: int = 1
    lockstep: bool = False  # then commands follow on stdin (perfci/engine/lockstep.py)
    parent_pid: int = 0  # the worker exits when this process is gone


class Sample(Message, frozen=True, tag="sample"):
    """Lockstep: `rewarm` untimed calls, then `n` samples of `case`; answered by `Sampled`. `iterations` (when > 0):
    calls per sample, the count both sides of the pair agreed on (the larger of their calibrated counts)."""

    case: str
    n: int = 1
    rewarm: int = 0
    iterations: int = 0


class Finish(Message, frozen=True, tag="finish"):
    """Lockstep: stop sampling; the worker finishes its cases and sends their results, then `Done`."""


# --- worker -> runner ------------------------------------------------------------------------------------------


class Ready(Message, frozen=True, tag="ready"):
    """The worker read its job and is about to set up the cases."""


class Start(Message, frozen=True, tag="start"):
    """A step of `case` is in flight: if the worker dies or hangs now, this case is to blame."""

    case: str


class Idle(Message, frozen=True, tag="idle"):
    """The step in flight ended well; no case is in flight."""


class Prepared(Message, frozen=True, tag="prepared"):
    """Lockstep: set-up is over; these cases are ready to sample. `iterations`: each case's calibrated calls per
    sample, so that the driver can give both sides of a pair the same count. `imported`: the library modules the
    set-ups imported, for the next pairs' workers to import while they wait (engine/preload.py)."""

    cases: tuple[str, ...]
    iterations: dict[str, Any] = {}
    imported: tuple[str, ...] = ()


class Sampled(Message, frozen=True, tag="sampled"):
    """Lockstep: the answer to a `Sample`. `failed`: the case raised (its `Error` came first); `missing`: the
    worker has no such case (it failed in set-up)."""

    case: str
    elapsed_s: float
    failed: bool = False
    missing: bool = False


class Result(Message, frozen=True, tag="result"):
    """One case's round, as the model's `Round` (the worker leaves its index at 0; the runner, which knows the
    round, sets it), and the work per call measured around it."""

    case: str
    flops: float | None
    bytes: float | None
    measured: Round

    def round(self, index: int) -> Round:
        return msgspec.structs.replace(self.measured, index=index)


class Error(Message, frozen=True, tag="error"):
    """`case` failed; it is not measured again in this run."""

    case: str
    kind: ErrorKind
    message: str


class Released(Message, frozen=True, tag="released"):
    """Lockstep, after `Finish`: the worker's GPU work is over (the profiled slices, energy blocks); what is left
    before its results (reading the slices, memory, teardown) runs on the host only, so the pair's other side may
    take the GPU now (engine/lockstep.finish_pair)."""


class Done(Message, frozen=True, tag="done"):
    """The worker finished its job; a lockstep worker then waits for the end of its stdin (`close`), so that its
    exit (a CUDA context's teardown) never overlaps another pair's measurement."""


class WorkerFailed(Message, frozen=True, tag="worker_failed"):
    """Made by the supervisor, never sent by a worker: the worker died with no case in flight."""

    message: str


Command = Sample | Finish
WorkerEvent = Ready | Start | Idle | Prepared | Sampled | Result | Error | Released | Done
Event = WorkerEvent | WorkerFailed  # what the supervisor hands to the runner
AnyMessage = Job | Command | Event

COMMANDS: tuple[type[Sample], type[Finish]] = (Sample, Finish)
WORKER_EVENTS = (Ready, Start, Idle, Prepared, Sampled, Result, Error, Released, Done)
_DECODER: msgspec.json.Decoder[AnyMessage] = msgspec.json.Decoder(AnyMessage)  # type: ignore[arg-type]


def decode(line: str | bytes) -> AnyMessage:
    """The message on `line` (one JSON object; surrounding white space ignored)."""
    try:
        return _DECODER.decode(line)
    except msgspec.ValidationError as exc:
        raise ProtocolError(f"{exc}: {_excerpt(line)}") from None
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        raise ProtocolError(f"not JSON: {_excerpt(line)}") from None


def decode_event(line: str | bytes) -> WorkerEvent:
    """A message a worker may send."""
    message = decode(line)
    if not isinstance(message, WORKER_EVENTS):
        raise ProtocolError(f"a worker does not send {message.type!r} messages")
    return message


def decode_command(line: str | bytes) -> Command:
    """A lockstep command."""
    message = decode(line)
    if not isinstance(message, COMMANDS):
        raise ProtocolError(f"expected a command ({', '.join(map(tag_of, COMMANDS))}), got {message.type!r}")
    return message


def decode_job(line: str | bytes) -> Job:
    message = decode(line)
    if not isinstance(message, Job):
        raise ProtocolError(f"expected a job, got {message.type!r}")
    return message


def _excerpt(line: str | bytes, limit: int = 120) -> str:
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    text = text.strip()
    return repr(text if len(text) <= limit else text[:limit] + "...")
