"""Correctness checks for workloads: compare an output with a reference within a stated tolerance.

Works on torch tensors, NumPy arrays and (nested) lists or tuples of them, without importing torch (a tensor is
converted through `.detach().float().cpu().numpy()`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from perfci.errors import WorkloadDefinitionError
from perfci.metrics.registry import ACCURACY_MAX_ABS, ACCURACY_REL_L2
from perfci.metrics.rounds import ACCURACY_NOTES, TOLERANCES_NOTES, shown_apart


@dataclass(frozen=True)
class Tolerance:
    """Either element-wise (`|a - e| <= atol + rtol * |e|` everywhere) or, when `max_rel_l2` is set, by the
    relative L2 error `||a - e|| / ||e||` (the right measure for int8 and reduced-precision outputs, whose
    element-wise errors are large where values are near zero)."""

    rtol: float = 1e-5
    atol: float = 1e-6
    max_rel_l2: float | None = None

    def describe(self) -> str:
        if self.max_rel_l2 is not None:
            return f"relative L2 error <= {self.max_rel_l2:g}"
        return f"|a - e| <= {self.atol:g} + {self.rtol:g} * |e|"


def _number_problem(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, Real):
        return "is not a number"
    if not math.isfinite(value):
        return "is not finite"
    return "is negative" if value < 0 else None


def checked_tolerance(what: str, value: object) -> Tolerance:
    """A tolerance as given to a workload (`what` names it in the error): a `Tolerance` whose bounds are numbers of
    at least 0, or one such number, the largest relative L2 error allowed (`Tolerance(max_rel_l2=...)`)."""
    if isinstance(value, Tolerance):
        fields = {"rtol": value.rtol, "atol": value.atol, "max_rel_l2": value.max_rel_l2}
        for name, number in fields.items():
            problem = None if name == "max_rel_l2" and number is None else _number_problem(number)
            if problem:
                raise WorkloadDefinitionError(
                    f"{what}: {name}={number!r:.40} {problem}; a tolerance's bounds are numbers of at least 0."
                )
        return value
    problem = _number_problem(value)
    if problem or not isinstance(value, Real):
        raise WorkloadDefinitionError(
            f"{what} = {value!r:.40} {problem}; give a Tolerance(...) or a number of at least 0 (the largest "
            "relative L2 error allowed)."
        )
    return Tolerance(max_rel_l2=float(value))


def to_numpy(value: Any) -> np.ndarray[Any, Any]:
    if hasattr(value, "detach"):  # torch.Tensor, without importing torch
        return np.asarray(value.detach().float().cpu().numpy(), dtype=np.float64)
    return np.asarray(value, dtype=np.float64)


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return [x for item in value for x in _flatten(item)]
    return [value]


def assert_close(actual: Any, expected: Any, tolerance: Tolerance, what: str = "output") -> None:
    """AssertionError naming the worst deviation and the tolerance when `actual` is not close to `expected`."""
    acts, exps = _flatten(actual), _flatten(expected)
    if len(acts) != len(exps):
        raise AssertionError(f"{what}: {len(acts)} outputs where the reference has {len(exps)}")
    for i, (a_raw, e_raw) in enumerate(zip(acts, exps, strict=True)):
        a, e = to_numpy(a_raw), to_numpy(e_raw)
        name = what if len(acts) == 1 else f"{what}[{i}]"
        if a.shape != e.shape:
            raise AssertionError(f"{name}: shape {a.shape} where the reference has {e.shape}")
        if not np.all(np.isfinite(e)):  # NaN compares false: every tolerance would pass, every error read 0
            raise AssertionError(
                f"{name}: the reference has {int(np.sum(~np.isfinite(e)))} non-finite values, so nothing can be "
                "checked against it"
            )
        if not np.all(np.isfinite(a)):
            raise AssertionError(f"{name}: {int(np.sum(~np.isfinite(a)))} non-finite values")
        if tolerance.max_rel_l2 is not None:
            rel = float(np.linalg.norm(a - e) / max(float(np.linalg.norm(e)), 1e-30))
            if rel > tolerance.max_rel_l2:
                raise AssertionError(
                    f"{name}: relative L2 error {shown_apart(rel, tolerance.max_rel_l2, 3)} exceeds "
                    f"{tolerance.describe()}"
                )
            continue
        excess = np.abs(a - e) - (tolerance.atol + tolerance.rtol * np.abs(e))
        if np.any(excess > 0):
            worst = np.unravel_index(int(np.argmax(excess)), excess.shape)
            raise AssertionError(
                f"{name}: {int(np.sum(excess > 0))} of {a.size} values off; worst at {tuple(map(int, worst))}: "
                f"{a[worst]:.6g} vs {e[worst]:.6g} (tolerance {tolerance.describe()})"
            )


@dataclass(frozen=True)
class Accuracy:
    """How far a variant's outputs are from the fp32 model's, over all outputs (the worst of each), and the bounds
    the tolerance puts on the two figures that are metrics (`tolerance_bounds`)."""

    max_abs_diff: float
    max_rel_diff: float  # |a - e| / (|e| + 1e-3 max|e|): the floor keeps values near zero from dominating
    rel_l2: float  # ||a - e|| / ||e||, the measure the default tolerances are stated in
    # the share of rows whose largest value is the reference's, where the one output is logits (2-d: rows of
    # at least 2 classes); None otherwise
    top1_agree: float | None = None
    rel_l2_bound: float = 0.0  # the largest relative L2 error the tolerance allows (`tolerance_bounds`)
    max_abs_bound: float = 0.0  # the largest absolute difference the tolerance allows


def tolerance_record(tolerance: Tolerance) -> dict[str, Any]:
    """The tolerance as numbers with the rule in words, for the results file."""
    if tolerance.max_rel_l2 is not None:
        numbers: dict[str, Any] = {"max_rel_l2": tolerance.max_rel_l2}
    else:
        numbers = {"rtol": tolerance.rtol, "atol": tolerance.atol}
    return {**numbers, "rule": tolerance.describe()}


def tolerance_bounds(tolerance: Tolerance, e: np.ndarray[Any, Any]) -> tuple[float, float]:
    """(relative L2 error, absolute difference) the tolerance allows for reference values `e`: a relative L2
    bound as stated, and the absolute difference it implies (||a - e||_inf <= ||a - e||_2 <= bound * ||e||);
    an element-wise rule's largest |a - e|, and the relative L2 error it implies (||atol + rtol |e||| / ||e||)."""
    norm = max(float(np.linalg.norm(e)), 1e-30)
    if tolerance.max_rel_l2 is not None:
        return tolerance.max_rel_l2, tolerance.max_rel_l2 * norm
    allowed = tolerance.atol + tolerance.rtol * np.abs(e)
    return float(np.linalg.norm(allowed)) / norm, float(np.max(allowed))


def top1_agreement(actual: Sequence[Any], reference: Sequence[Any]) -> float | None:
    """The share of rows whose arg-max is the reference's, where the one output is logits (2-d, at least 2
    columns); None otherwise (several outputs, hidden states, a regression head)."""
    if len(actual) != 1 or len(reference) != 1:
        return None
    a, e = np.asarray(actual[0]), np.asarray(reference[0])
    if e.ndim != 2 or e.shape[1] < 2 or a.shape != e.shape or e.shape[0] == 0:
        return None
    return float(np.mean(np.argmax(a, axis=1) == np.argmax(e, axis=1)))


def compare_outputs(actual: Sequence[Any], reference: Sequence[Any], tolerance: Tolerance | None = None) -> Accuracy:
    if len(actual) != len(reference):
        raise AssertionError(f"{len(actual)} outputs where the fp32 model has {len(reference)}")
    worst_abs = worst_rel = worst_l2 = bound_l2 = bound_abs = 0.0
    for a_raw, e_raw in zip(actual, reference, strict=True):
        a, e = np.asarray(a_raw, dtype=np.float64), np.asarray(e_raw, dtype=np.float64)
        if a.shape != e.shape:
            raise AssertionError(f"output shape {a.shape} where the fp32 model gives {e.shape}")
        if a.size == 0:
            continue
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(e))):  # no figure: max(0, nan) would record 0
            raise AssertionError("non-finite outputs")
        diff = np.abs(a - e)
        scale = float(np.max(np.abs(e)))
        worst_abs = max(worst_abs, float(np.max(diff)))
        worst_rel = max(worst_rel, float(np.max(diff / (np.abs(e) + 1e-3 * scale + 1e-30))))
        worst_l2 = max(worst_l2, float(np.linalg.norm(a - e) / max(float(np.linalg.norm(e)), 1e-30)))
        if tolerance is not None:
            b_l2, b_abs = tolerance_bounds(tolerance, e)
            bound_l2, bound_abs = max(bound_l2, b_l2), max(bound_abs, b_abs)
    top1 = top1_agreement(actual, reference)
    return Accuracy(worst_abs, worst_rel, worst_l2, top1, bound_l2, bound_abs)


def check_against(
    ctx: Any, actual: Sequence[Any], reference: Sequence[Any], tolerance: Tolerance, reference_name: str, what: str
) -> None:
    """A variant's outputs against the reference's on the same inputs: the figures go into the case's notes
    (`record_accuracy`), and the case's check compares them."""
    record_accuracy(ctx, actual, reference, tolerance, reference_name)
    ctx.check_close(lambda: actual, reference, tolerance, what=what)


def record_accuracy(
    ctx: Any, actual: Sequence[Any], reference: Sequence[Any], tolerance: Tolerance, reference_name: str
) -> None:
    """The tolerance and the worst differences of `actual` from `reference` into the case's notes under "accuracy"
    (each round's telemetry), where the accuracy metrics read them (`accuracy.rel_l2`, `accuracy.max_abs`, and
    `accuracy.top1_agree` for logits; metrics/definitions.py), with the bounds the tolerance puts on the first two
    under "tolerances". Outputs that cannot be compared (other counts or shapes) record nothing: the case's check
    says what is wrong."""
    try:
        accuracy = compare_outputs([to_numpy(a) for a in actual], [to_numpy(e) for e in reference], tolerance)
    except AssertionError:
        return
    record: dict[str, Any] = {
        "reference": reference_name,
        "tolerance": tolerance_record(tolerance),
        "max_abs_diff": accuracy.max_abs_diff,
        "max_rel_diff": accuracy.max_rel_diff,
        "rel_l2": accuracy.rel_l2,
    }
    if accuracy.top1_agree is not None:
        record["top1_agree"] = accuracy.top1_agree
    ctx.notes[ACCURACY_NOTES] = record
    ctx.notes[TOLERANCES_NOTES] = {ACCURACY_REL_L2: accuracy.rel_l2_bound, ACCURACY_MAX_ABS: accuracy.max_abs_bound}
