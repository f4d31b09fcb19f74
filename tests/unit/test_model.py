from __future__ import annotations

import dataclasses

import msgspec
import pytest

from perfci.format.model import MIN_SECONDS, CaseSpec, GitInfo, Round, format_case_id, sample_seconds


def test_case_id_format() -> None:
    spec = CaseSpec(workload="kernels.matmul", params={"n": 1024, "dtype": "bf16"}, device="cuda")
    assert spec.id == "kernels.matmul[n=1024,dtype=bf16]@cuda"
    assert format_case_id("x.y", {}, "cpu") == "x.y@cpu"


def test_the_format_s_objects_are_frozen_structs() -> None:
    r = Round(index=0, pid=1, iterations=4, samples=(4.0, 8.0), warmup_s=0.0, stop_reason="budget", threads=1)
    assert isinstance(r, msgspec.Struct)
    with pytest.raises(AttributeError):
        r.iterations = 5  # type: ignore[misc]
    assert r.per_call == (1.0, 2.0) and r.sorted_per_call == (1.0, 2.0)


def test_the_structs_answer_the_dataclasses_functions() -> None:
    """`dataclasses.replace` makes a new object (its per-call times computed afresh, its checks run), `asdict` and
    `fields` list the fields."""
    r = Round(index=0, pid=1, iterations=4, samples=(4.0, 8.0), warmup_s=0.0, stop_reason="budget", threads=1)
    assert r.per_call == (1.0, 2.0)
    halved = dataclasses.replace(r, iterations=8)
    assert halved.per_call == (0.5, 1.0) and halved.index == r.index and r.iterations == 4
    assert dataclasses.is_dataclass(r) and [f.name for f in dataclasses.fields(GitInfo)] == [
        "commit",
        "branch",
        "dirty",
    ]
    assert dataclasses.asdict(GitInfo("c", "main", False)) == {"commit": "c", "branch": "main", "dirty": False}
    with pytest.raises(ValueError, match=r"telemetry\.timer"):
        dataclasses.replace(r, telemetry={"timer": 3})


def test_a_measured_time_is_floored_to_the_format_s_smallest_sample() -> None:
    assert sample_seconds(0.0) == MIN_SECONDS == 1e-12
    assert sample_seconds(2e-3) == 2e-3


def test_control_characters_in_an_id_are_written_as_escapes() -> None:
    """An id holding ESC [2J cleared the terminal of whoever read the log; one holding a newline split its row."""
    from perfci.format.model import printable

    spec = CaseSpec("perf.ctrl", {"s": "a\x1b[2J\x1b[31mRED", "t": "l1\nl2", "u": "é\x85"}, "cpu")
    assert spec.id == "perf.ctrl[s=a\\x1b[2J\\x1b[31mRED,t=l1\\nl2,u=é\\x85]@cpu"
    assert spec.id.isprintable()
    assert printable("x\ny\t\x07z", lines=True) == "x\ny\t\\x07z"  # a message keeps its lines
    assert printable("plain id[n=1]@cpu") == "plain id[n=1]@cpu"
