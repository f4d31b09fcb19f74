"""The worker protocol (perfci/engine/protocol.py): every message survives encode/decode, anything else is refused
with ProtocolError, and a worker that sends garbage costs a case (or its round) an error, never a traceback."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfci.engine.protocol import (
    COMMANDS,
    WORKER_EVENTS,
    Done,
    Error,
    Finish,
    Idle,
    Job,
    JobCase,
    Message,
    Prepared,
    ProtocolError,
    Ready,
    Result,
    Sample,
    Sampled,
    Start,
    WorkerFailed,
    decode,
    decode_command,
    decode_event,
    decode_job,
    tag_of,
)
from perfci.engine.runner import Runner, RunSettings
from perfci.engine.supervisor import Limits, WorkerLost, WorkerProcess, run_worker
from perfci.format.model import Round, TelemetryKeys
from perfci.workloads.discovery import cases_from_sources

DATA = Path(__file__).parent.parent / "data" / "workloads"
MESSAGES: dict[str, type[Message]] = {tag_of(m): m for m in (Job, *COMMANDS, *WORKER_EVENTS, WorkerFailed)}

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


def strategy(tp: Any) -> st.SearchStrategy[Any]:
    """Values of the field type `tp`, as a worker or the runner could send them (finite numbers: msgspec writes NaN
    and infinities as null)."""
    origin = get_origin(tp)
    simple: dict[Any, st.SearchStrategy[Any]] = {
        Any: JSON,
        bool: st.booleans(),
        int: st.integers(),
        float: st.floats(allow_nan=False, allow_infinity=False),
        str: st.text(),
        type(None): st.none(),
    }
    if tp in simple:
        return simple[tp]
    if origin in (Union, types.UnionType):
        return st.one_of(*[strategy(arm) for arm in get_args(tp)])
    if origin is Literal:
        return st.sampled_from(get_args(tp))
    if origin is tuple:
        return st.lists(strategy(get_args(tp)[0]), max_size=4).map(tuple)
    if origin is dict:
        return st.dictionaries(st.text(), JSON, max_size=3)
    if tp is Round:  # the format's bounds: a sample of a picosecond to 10^7 s, counts from 0, at least one call
        return st.builds(
            Round,
            index=st.integers(0, 10**6),
            pid=st.integers(),
            iterations=st.integers(1, 10**9),
            samples=st.lists(st.floats(1e-12, 1e7), min_size=1, max_size=4).map(tuple),
            warmup_s=st.floats(0, 1e3),
            stop_reason=st.text(),
            threads=st.integers(),
            telemetry=st.dictionaries(st.text().filter(lambda k: k not in TelemetryKeys.__annotations__), JSON),
        )
    assert isinstance(tp, type) and issubclass(tp, msgspec.Struct), tp
    hints = get_type_hints(tp)
    return st.builds(tp, **{name: strategy(hints[name]) for name in tp.__struct_fields__})


def test_every_message_kind_is_registered() -> None:
    assert set(MESSAGES) == {
        "job", "sample", "finish",  # runner -> worker
        "ready", "start", "idle", "prepared", "sampled", "result", "error", "released", "done",  # worker -> runner
        "worker_failed",  # supervisor -> runner
    }  # fmt: skip
    assert all(tag == tag_of(cls) == cls.__name__.lower() or tag == "worker_failed" for tag, cls in MESSAGES.items())


@pytest.mark.parametrize("cls", list(MESSAGES.values()), ids=list(MESSAGES))
@given(data=st.data())
def test_round_trip(cls: type[Message], data: st.DataObject) -> None:
    message = data.draw(strategy(cls))
    line = message.encode()
    assert "\n" not in line and json.loads(line)["type"] == tag_of(cls) == message.type
    assert decode(line) == message
    assert decode(line.encode() + b"\n") == message  # bytes with the newline, as read from a pipe


def test_examples_decode_to_typed_fields() -> None:
    job = Job(cases=(JobCase("t.f[n=1]@cpu", "t.py", "t.f", {"n": 1}, "cpu"),), round_index=2, cpu_affinity=(3,))
    assert decode_job(job.encode()) == job
    assert decode_command(Sample("c", n=2, rewarm=1).encode()) == Sample("c", 2, 1)
    assert decode_command(Finish().encode()) == Finish()
    measured = Round(0, 7, 4, (0.5, 0.25), 0.01, "budget", 1, 10, 2, None, {"timer": "perf_counter"})
    result = Result("c", None, 8.0, measured)
    decoded = decode_event(result.encode())
    assert decoded == result and isinstance(decoded, Result)
    assert decoded.round(3).samples == (0.5, 0.25) and decoded.round(3).index == 3 and decoded.round(3).pid == 7
    assert decode_event('{"type":"sampled","case":"c","elapsed_s":0}') == Sampled("c", 0)  # defaults filled in
    for event in (Ready(), Start("c"), Idle(), Prepared(("a", "b")), Error("c", "oom", "m"), Done()):
        assert decode_event(event.encode()) == event


def _result(measured: dict[str, Any]) -> str:
    """A `result` line whose round has the fields of `measured` over a valid one's."""
    valid = {"index": 0, "pid": 1, "iterations": 1, "samples": [1e-3], "warmup_s": 0, "stop_reason": "x", "threads": 1}
    return json.dumps({"type": "result", "case": "c", "flops": None, "bytes": None, "measured": {**valid, **measured}})


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("", "not JSON"),
        ("garbage", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        ('{"type": "start", "case": "c"', "not JSON"),
        ("[1, 2]", "Expected `object`, got `array`"),
        ('"start"', "Expected `object`, got `str`"),
        ("{}", "Object missing required field `type`"),
        ('{"event": "start", "case": "c"}', "Object missing required field `type`"),  # the old hand-built format
        ('{"type": "progress"}', "Invalid value 'progress' - at `$.type`"),
        ('{"type": 3}', "Expected `str` - at `$.type`"),
        ('{"type": "start"}', "Object missing required field `case`"),
        ('{"type": "start", "case": 1}', "Expected `str`, got `int` - at `$.case`"),
        ('{"type": "start", "case": "c", "pid": 1}', "Object contains unknown field `pid`"),
        ('{"type": "error", "case": "c", "kind": "bad", "message": "m"}', "Invalid enum value 'bad' - at `$.kind`"),
        ('{"type": "sampled", "case": "c", "elapsed_s": true}', "Expected `float`, got `bool` - at `$.elapsed_s`"),
        ('{"type": "sampled", "case": "c", "elapsed_s": "1"}', "Expected `float`, got `str` - at `$.elapsed_s`"),
        ('{"type": "sample", "case": "c", "n": 1.5}', "Expected `int`, got `float` - at `$.n`"),
        ('{"type": "prepared", "cases": "ab"}', "Expected `array`, got `str` - at `$.cases`"),
        ('{"type": "prepared", "cases": ["a", null]}', "Expected `str`, got `null` - at `$.cases[1]`"),
        (
            '{"type": "job", "cases": [{"id": "c"}], "round_index": 0}',
            "missing required field `source` - at `$.cases[0]`",
        ),
        (
            '{"type": "job", "cases": [], "round_index": 0, "timing": []}',
            "Expected `object`, got `array` - at `$.timing`",
        ),
        ('{"type": "job", "cases": [], "round_index": 0, "cpu_affinity": [true]}', "at `$.cpu_affinity[0]`"),
        # a round is read with the results format's bounds, its telemetry's named keys included
        (_result({"samples": [0]}), "Expected `float` >= 1e-12 - at `$.measured.samples[0]`"),
        (_result({"index": -1}), "Expected `int` >= 0 - at `$.measured.index`"),
        (
            _result({"telemetry": {"cpu_wait": 3}}),
            "Expected `float` <= 1.0 - at `$.telemetry.cpu_wait` - at `$.measured`",
        ),
        (_result({"extra": 1}), "Object contains unknown field `extra` - at `$.measured`"),
    ],
)
def test_malformed_messages_are_refused(line: str | bytes, says: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode(line)
    assert says in str(caught.value)


def test_messages_in_the_wrong_direction_are_refused() -> None:
    job = Job(cases=(), round_index=0)
    for not_an_event in (job, Sample("c"), Finish(), WorkerFailed("only the supervisor says this")):
        with pytest.raises(ProtocolError, match="a worker does not send"):
            decode_event(not_an_event.encode())
    with pytest.raises(ProtocolError, match="expected a command"):
        decode_command(Start("c").encode())
    with pytest.raises(ProtocolError, match="expected a job"):
        decode_job(Finish().encode())


@given(st.binary() | st.text())
def test_any_line_decodes_or_is_refused(line: str | bytes) -> None:
    with contextlib.suppress(ProtocolError):
        assert isinstance(decode(line), Message)


FIELD_NAMES = sorted({name for cls in MESSAGES.values() for name in cls.__struct_fields__} | {"extra"})


@given(tag=st.sampled_from(sorted(MESSAGES)), body=st.dictionaries(st.sampled_from(FIELD_NAMES), JSON, max_size=6))
def test_any_object_with_a_known_type_decodes_or_is_refused(tag: str, body: dict[str, Any]) -> None:
    try:
        message = decode(json.dumps({**body, "type": tag}))
    except ProtocolError:
        return
    assert tag == message.type and decode(message.encode()) == message


# --- a worker that sends garbage ---------------------------------------------------------------------------------


def fake_worker(tmp_path: Path, *lines: str) -> str:
    """A stand-in for `python -m perfci.engine.worker`: reads its job, writes `lines` (CASE: the job's first case),
    then hangs until killed."""
    script = tmp_path / "fake-python"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, sys, time\n"
        "case = json.loads(sys.stdin.readline())['cases'][0]['id']\n"
        f"for line in {list(lines)!r}:\n"
        "    sys.stdout.write(line.replace('CASE', case) + '\\n')\n"
        "sys.stdout.flush()\n"
        "time.sleep(60)\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def run_with(tmp_path: Path, python: str) -> dict[str, tuple[str, str]]:
    """One round of tiny.py's two cases with `python` as the worker; each case's (status, first error)."""
    settings = RunSettings(rounds=1, case_timeout_s=20, peaks_cache=None)
    runner = Runner(settings, tmp_path / "out", worker_env=dict(os.environ), worker_python=python)
    run = runner.run(cases_from_sources([str(DATA / "tiny.py")]))
    assert (tmp_path / "out" / "results.json").exists()
    return {c.id: (c.errors[0].kind, c.errors[0].message) for c in run.cases if c.status.value == "error"}


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("not json at all", "not JSON: 'not json at all'"),
        ('{"type":"progress","case":"CASE"}', "Invalid value 'progress' - at `$.type`"),
        ('{"type":"result","case":"CASE"}', "Object missing required field `flops`"),
    ],
)
def test_garbage_during_a_case_is_that_case_s_crash(tmp_path: Path, line: str, says: str) -> None:
    errors = run_with(tmp_path, fake_worker(tmp_path, '{"type":"ready"}', '{"type":"start","case":"CASE"}', line))
    assert len(errors) == 2  # each case in its turn was in flight in a fresh worker
    for kind, message in errors.values():
        assert kind == "crash"
        assert message.startswith("worker sent a malformed message (") and says in message


def test_garbage_between_cases_fails_the_round_s_remaining_cases(tmp_path: Path) -> None:
    errors = run_with(tmp_path, fake_worker(tmp_path, '{"type":"ready"}', "garbage"))
    assert [kind for kind, _ in errors.values()] == ["infrastructure", "infrastructure"]
    assert all("worker sent a malformed message (not JSON: 'garbage')" in m for _, m in errors.values())


def test_garbage_from_a_lockstep_worker_loses_it(tmp_path: Path) -> None:
    python = fake_worker(tmp_path, '{"type":"ready"}', '{"type":"start","case":"CASE"}', '{"type":"idle"')
    job = Job(cases=(JobCase("t.f@cpu", "t.py", "t.f", {}, "cpu"),), round_index=0)
    events: list[object] = []
    worker = WorkerProcess(job, Limits(20, 2**30), tmp_path / "w.log", events.append, python=python)
    try:
        with pytest.raises(WorkerLost) as lost:
            worker.wait_for(Prepared, 20)
    finally:
        worker.close()
    assert lost.value.kind == "crash" and lost.value.case == "t.f@cpu"
    assert "worker sent a malformed message (not JSON" in lost.value.reason
    assert events == [Ready(), Start("t.f@cpu")]


def test_the_real_worker_sends_only_protocol_events(tmp_path: Path) -> None:
    (spec, *_) = cases_from_sources([str(DATA / "tiny.py")])
    job = Job(cases=(JobCase(spec.id, spec.source, spec.workload, spec.params, spec.device),), round_index=0)
    events: list[object] = []
    run_worker(job, Limits(60, 2**31), tmp_path / "w.log", events.append)
    assert events[0] == Ready() and events[-1] == Done()
    (result,) = [e for e in events if isinstance(e, Result)]
    assert result.case == spec.id and result.measured.pid > 0 and len(result.measured.samples) >= 5
