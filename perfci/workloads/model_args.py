"""The arguments `perfci.model_workload` and `perfci.onnx_workload` share (`batch`, `variants`, `tolerances`),
checked when the workload is defined: one WorkloadDefinitionError naming the workload and the argument. Unchecked,
`batch=1` ended the import in a TypeError at perfci's line, `batch=[0]` measured an empty call, and a tolerance for
a misspelt variant was ignored."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from numbers import Integral

from perfci.errors import WorkloadDefinitionError
from perfci.workloads.checks import Tolerance, checked_tolerance


def did_you_mean(word: object, choices: Sequence[str]) -> str | None:
    """The hint "did you mean 'eager'?" for the choice closest to a misspelt `word`; None when none is close."""
    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return f"did you mean {close[0]!r}?" if close else None


def _hint(word: object, choices: Sequence[str], what: str) -> str:
    near = did_you_mean(word, choices)
    return f"{near} {what}: {', '.join(choices)}" if near else f"{what}: {', '.join(choices)}"


def positive_int(value: object) -> bool:
    """An integer of at least 1 (not a bool, not a float such as 2.0)."""
    return isinstance(value, Integral) and not isinstance(value, bool) and int(value) >= 1


def batch_sizes(who: str, batch: object) -> list[int]:
    """`batch` as a list of batch sizes: one integer is a list of one (`batch=8`), and each must be an integer of at
    least 1."""
    if isinstance(batch, Integral) and not isinstance(batch, bool):
        values: list[object] = [batch]
    elif isinstance(batch, Iterable) and not isinstance(batch, str | bytes | Mapping):
        values = list(batch)
    else:
        raise WorkloadDefinitionError(
            f"{who}: batch={batch!r:.60} is not a batch size or a list of them; give e.g. batch=8 or batch=[1, 8]."
        )
    if not values:
        raise WorkloadDefinitionError(f"{who}: batch={batch!r} lists no batch size; give at least one, e.g. batch=[1].")
    bad = [b for b in values if not positive_int(b)]
    if bad:
        raise WorkloadDefinitionError(
            f"{who}: batch={values!r:.60} has {bad[0]!r:.30}, but a batch size must be an integer of at least 1."
        )
    return [int(b) for b in values if isinstance(b, Integral)]


def variant_names(who: str, variants: object, known: Sequence[str], kind: str) -> list[str]:
    """`variants` as a list of names of `known` variants: one name is a list of one (`variants="fp16"`)."""
    if isinstance(variants, str):
        values: list[object] = [variants]
    elif isinstance(variants, Iterable) and not isinstance(variants, bytes | Mapping):
        values = list(variants)
    else:
        raise WorkloadDefinitionError(f"{who}: variants={variants!r:.60} is not a list of variant names.")
    unknown = [v for v in values if v not in known]
    if unknown:
        raise WorkloadDefinitionError(
            f"{who}: unknown {kind} variant {unknown[0]!r:.40} in variants.",
            hint=_hint(unknown[0], known, f"the {kind} variants"),
        )
    return [str(v) for v in values]


def tolerances_by_variant(who: str, given: object, known: Sequence[str], kind: str) -> dict[str, Tolerance]:
    """`tolerances` checked: keys that name `known` variants, values that are a `Tolerance` of numbers of at least 0
    or one such number (the largest relative L2 error allowed, as `Tolerance(max_rel_l2=...)`)."""
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise WorkloadDefinitionError(
            f"{who}: tolerances={given!r:.60} is not a dict from variant name to a Tolerance or a number."
        )
    out: dict[str, Tolerance] = {}
    for variant, value in given.items():
        if variant not in known:
            raise WorkloadDefinitionError(
                f"{who}: tolerances names {variant!r:.40}, which is no {kind} variant.",
                hint=_hint(variant, known, f"the {kind} variants"),
            )
        out[variant] = checked_tolerance(f"{who}: tolerances[{variant!r}]", value)
    return out
