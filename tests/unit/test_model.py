from __future__ import annotations

import dataclasses

import pytest

from perfci.format.model import CaseSpec, Round, format_case_id


def test_case_id_format() -> None:
    spec = CaseSpec(workload="kernels.matmul", params={"n": 1024, "dtype": "bf16"}, device="cuda")
    assert spec.id == "kernels.matmul[n=1024,dtype=bf16]@cuda"
    assert format_case_id("x.y", {}, "cpu") == "x.y@cpu"


def test_dataclasses_are_frozen() -> None:
    r = Round(index=0, pid=1, iterations=4, samples=(4.0, 8.0), warmup_s=0.0, stop_reason="budget", threads=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.iterations = 5  # type: ignore[misc]
    assert r.per_call == (1.0, 2.0)
