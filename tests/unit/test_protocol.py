"""The worker protocol (perfci/engine/protocol.py): every message survives encode/decode, anything else is refused
with ProtocolError, and a worker that sends garbage costs a case (or its round) an error, never a traceback."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import types
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfci.engine.protocol import (
    MESSAGES,
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
)
from perfci.engine.runner import Runner, RunSettings
from perfci.engine.supervisor import Limits, WorkerLost, WorkerProcess, run_worker
from perfci.format.model import Round
from perfci.workloads.discovery import cases_from_sources

DATA = Path(__file__).parent.parent / "data" / "workloads"

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


def strategy(tp: Any) -> st.SearchStrategy[Any]:
    """Values of the field type `tp`, as a worker or the runner could send them (no NaN: it is never equal)."""
    origin = get_origin(tp)
    simple: dict[Any, st.SearchStrategy[Any]] = {
        Any: JSON,
        bool: st.booleans(),
        int: st.integers(),
        float: st.floats(allow_nan=False),
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
    assert isinstance(tp, type) and is_dataclass(tp), tp
    hints = get_type_hints(tp)
    return st.builds(tp, **{f.name: strategy(hints[f.name]) for f in fields(tp)})


def test_every_message_kind_is_registered() -> None:
    assert set(MESSAGES) == {
        "job", "sample", "finish",  # runner -> worker
        "ready", "start", "idle", "prepared", "sampled", "result", "error", "done",  # worker -> runner
        "worker_failed",  # supervisor -> runner
    }  # fmt: skip
    assert all(tag == cls.TYPE for tag, cls in MESSAGES.items())


@pytest.mark.parametrize("cls", list(MESSAGES.values()), ids=list(MESSAGES))
@given(data=st.data())
def test_round_trip(cls: type[Message], data: st.DataObject) -> None:
    message = data.draw(strategy(cls))
    line = message.encode()
    assert "\n" not in line and json.loads(line)["type"] == cls.TYPE
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


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("", "not JSON"),
        ("garbage", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        ('{"type": "start", "case": "c"', "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('"start"', "not a JSON object"),
        ("{}", "unknown message type None"),
        ('{"event": "start", "case": "c"}', "unknown message type None"),  # the old hand-built format
        ('{"type": "progress"}', "unknown message type 'progress'"),
        ('{"type": 3}', "unknown message type 3"),
        ('{"type": "start"}', "start: missing field case"),
        ('{"type": "start", "case": 1}', "start.case: expected a string, got a number"),
        ('{"type": "start", "case": "c", "pid": 1}', "start: unknown field(s) pid"),
        ('{"type": "error", "case": "c", "kind": "bad", "message": "m"}', "error.kind: 'bad' is not one of"),
        ('{"type": "sampled", "case": "c", "elapsed_s": true}', "sampled.elapsed_s: expected a number"),
        ('{"type": "sampled", "case": "c", "elapsed_s": "1"}', "sampled.elapsed_s: expected a number"),
        ('{"type": "sample", "case": "c", "n": 1.5}', "sample.n: expected an integer"),
        ('{"type": "prepared", "cases": "ab"}', "prepared.cases: expected an array"),
        ('{"type": "prepared", "cases": ["a", null]}', "prepared.cases[1]: expected a string, got null"),
        ('{"type": "job", "cases": [{"id": "c"}], "round_index": 0}', "job.cases[0]: missing field source"),
        ('{"type": "job", "cases": [], "round_index": 0, "timing": []}', "job.timing: expected an object"),
        ('{"type": "job", "cases": [], "round_index": 0, "cpu_affinity": [true]}', "job.cpu_affinity[0]"),
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


FIELD_NAMES = sorted({f.name for cls in MESSAGES.values() for f in fields(cls)} | {"extra"})


@given(tag=st.sampled_from(sorted(MESSAGES)), body=st.dictionaries(st.sampled_from(FIELD_NAMES), JSON, max_size=6))
def test_any_object_with_a_known_type_decodes_or_is_refused(tag: str, body: dict[str, Any]) -> None:
    try:
        message = decode(json.dumps({**body, "type": tag}))
    except ProtocolError:
        return
    assert tag == message.TYPE and decode(message.encode()) == message


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
        ('{"type":"progress","case":"CASE"}', "unknown message type 'progress'"),
        ('{"type":"result","case":"CASE"}', "result: missing field flops"),
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
