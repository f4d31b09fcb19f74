"""`@perfci.workload`: declare a parameterised piece of work to measure.

The decorated function builds its inputs and returns the callable to time. The decorator returns a `Workload`
object (itself callable like the original function); discovery finds these objects in a module's namespace, so
there is no global registry.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from perfci.errors import WorkloadDefinitionError
from perfci.model import CaseSpec, ParamValue

SetupFn = Callable[..., Callable[[], object]]


@dataclass
class WorkloadContext:
    """What a workload's set-up receives. `flops`, `bytes`, `teardown` and `check` may be set by the set-up."""

    device: str
    params: dict[str, ParamValue]
    seed: int
    flops: float | None = None
    bytes: float | None = None
    teardown: Callable[[], None] | None = None
    check: Callable[[], None] | None = None  # raises AssertionError when the output is wrong


@dataclass(frozen=True)
class Workload:
    name: str
    setup: SetupFn
    params: Mapping[str, Sequence[ParamValue]] = field(default_factory=dict)
    devices: tuple[str, ...] = ("cpu",)
    suite: str = ""
    tags: tuple[str, ...] = ()
    skip: Callable[..., bool | str] | None = None
    timing: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self, ctx: WorkloadContext, **params: ParamValue) -> Callable[[], object]:
        return self.setup(ctx, **params)

    def grid(self) -> list[dict[str, ParamValue]]:
        keys = list(self.params)
        combos = itertools.product(*(self.params[k] for k in keys))
        return [dict(zip(keys, values, strict=True)) for values in combos]

    def skip_reason(self, params: Mapping[str, ParamValue], device: str) -> str | None:
        if self.skip is None:
            return None
        verdict = self.skip(device=device, **params)
        if verdict is True:
            return "skipped by the workload's skip predicate"
        return verdict or None

    def cases(self, stem: str, source: str) -> list[CaseSpec]:
        full = f"{stem}.{self.name}"
        return [
            CaseSpec(workload=full, params=p, device=d, source=source, tags=self.tags, suite=self.suite or stem)
            for p in self.grid()
            for d in self.devices
            if self.skip_reason(p, d) is None
        ]


@overload
def workload(fn: SetupFn) -> Workload: ...


@overload
def workload(
    fn: None = None,
    *,
    params: Mapping[str, Sequence[ParamValue]] | None = None,
    devices: Sequence[str] = ("cpu",),
    name: str | None = None,
    suite: str = "",
    tags: Sequence[str] = (),
    skip: Callable[..., bool | str] | None = None,
    timing: Mapping[str, Any] | None = None,
) -> Callable[[SetupFn], Workload]: ...


def workload(
    fn: SetupFn | None = None,
    *,
    params: Mapping[str, Sequence[ParamValue]] | None = None,
    devices: Sequence[str] = ("cpu",),
    name: str | None = None,
    suite: str = "",
    tags: Sequence[str] = (),
    skip: Callable[..., bool | str] | None = None,
    timing: Mapping[str, Any] | None = None,
) -> Workload | Callable[[SetupFn], Workload]:
    """Decorator: `@workload` or `@workload(params={...}, devices=[...])`."""

    def wrap(f: SetupFn) -> Workload:
        grid = dict(params or {})
        for key, values in grid.items():
            if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
                raise WorkloadDefinitionError(
                    f"workload {f.__name__!r}: parameter {key!r} must be a non-empty list of values.",
                )
        if not devices:
            raise WorkloadDefinitionError(f"workload {f.__name__!r}: 'devices' must name at least one device.")
        return Workload(
            name=name or f.__name__,
            setup=f,
            params=grid,
            devices=tuple(devices),
            suite=suite,
            tags=tuple(tags),
            skip=skip,
            timing=dict(timing or {}),
        )

    return wrap(fn) if fn is not None else wrap
