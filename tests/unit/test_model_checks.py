"""A model workload's set-up checks what its figures rest on: a reference with non-finite values, outputs with no
tensors and inputs that ignore the batch are errors, not accuracy 0 or a 16x too good time per item."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch

from perfci.errors import WorkloadDefinitionError
from perfci.workloads.api import LocatedFailure
from perfci.workloads.checks import Tolerance, assert_close, compare_outputs
from perfci.workloads.torch_model import TorchModel


@dataclass
class Ctx:
    """The part of the workload context a model's set-up uses; its check runs as the real one does."""

    seed: int = 0
    device: str = "cpu"
    notes: dict[str, Any] = field(default_factory=dict)
    check: Any = None  # the real context's deferred check (none here: `check_close` runs at once)

    def check_close(self, produce: Any, expected: Any, tolerance: Tolerance, what: str = "output") -> None:
        assert_close(produce(), expected, tolerance, what)


class NanInFp32(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        return y * float("nan") if y.dtype == torch.float32 else y


def test_a_reference_with_non_finite_values_checks_nothing() -> None:
    """bf16 against a NaN fp32 reference read `rel L2 error 0`, passed and was recommended."""
    model = TorchModel(NanInFp32, lambda b: torch.randn(b, 8), {"bf16": Tolerance(max_rel_l2=0.05)})
    ctx = Ctx()
    with pytest.raises(AssertionError, match="the reference has 8 non-finite values, so nothing can be checked"):
        model.setup(ctx, "bf16", 2)
    assert "accuracy" not in ctx.notes  # no figure recorded (it was 0)
    with pytest.raises(AssertionError, match="non-finite"):
        compare_outputs([np.ones(3)], [np.array([1.0, np.nan, 1.0])])


def test_a_model_whose_output_holds_no_tensors_is_refused() -> None:
    class Three(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> int:
            return 3

    model = TorchModel(Three, lambda b: torch.randn(b, 8), {"bf16": Tolerance(max_rel_l2=0.05)})
    with pytest.raises(WorkloadDefinitionError, match=r"the model's output holds no tensors \(int\)"):
        model.setup(Ctx(), "bf16", 2)


def test_a_factory_that_returns_no_module_is_said_at_its_line() -> None:
    """A factory returning a function or None failed in perfci's code: "'function' object has no attribute 'to'
    (at torch_model.py:232)" (a user audit)."""
    for factory, kind in ((lambda: lambda x: x * 2, "function"), (lambda: None, "NoneType")):
        model = TorchModel(factory, lambda b: torch.randn(b, 8), {})
        with pytest.raises(LocatedFailure) as failed:
            model.setup(Ctx(), "eager", 2)
        line = factory.__code__.co_firstlineno
        assert str(failed.value).startswith(
            f"test_model_checks.py:{line}: the model factory returned {kind}, not a torch.nn.Module"
        ), failed.value
        model.rehearse("cpu", ["eager"], [2])  # the warm-up leaves it to the case's own set-up: no raise


def test_inputs_that_ignore_the_batch_are_refused() -> None:
    lin = lambda: torch.nn.Linear(8, 4)  # noqa: E731
    fixed = TorchModel(lin, lambda b: torch.randn(4, 8), {"eager": Tolerance()})
    with pytest.raises(WorkloadDefinitionError, match=r"inputs\(64\) gives tensors whose first dimensions are \[4\]"):
        fixed.setup(Ctx(), "eager", 64)
    fixed.setup(Ctx(), "eager", 4)  # the batch it does give
    # any input whose first dimension is the batch will do (a broadcast scale beside it is fine)
    run = TorchModel(lambda: _Scaled(), lambda b: {"x": torch.randn(b, 8), "s": torch.ones(1)}, {"eager": Tolerance()})
    assert run.setup(Ctx(), "eager", 16)() is not None


class _Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * s


def test_a_factory_and_inputs_given_the_wrong_way_round_are_refused_at_definition() -> None:
    import perfci

    with pytest.raises(WorkloadDefinitionError, match="its factory cannot be called with 0 arguments"):
        perfci.model_workload(lambda b: torch.randn(b, 8), inputs=lambda: torch.randn(2, 8))
    with pytest.raises(WorkloadDefinitionError, match="its inputs cannot be called with 1 argument"):
        perfci.model_workload(lambda: torch.nn.Linear(8, 4), inputs=lambda: torch.randn(2, 8))
    assert perfci.model_workload(lambda: torch.nn.Linear(8, 4), inputs=lambda b, scale=1.0: torch.randn(b, 8))
