"""What a metric is: one definition (`MetricDef`), made by decorating the function that takes a round's value
(`@metric(...)`), and the registry object that everyone else reads (`MetricRegistry`).

A definition owns everything about its metric: its name and family, unit and direction, whether it is timed
(statistical rule on per-round values) or near-deterministic (tolerance rule), its default practical threshold,
how a round's value is taken from the round, how the case's value is made from the rounds, whether a comparison
looks at it by default, its column in run tables, whether the history store keeps its round statistics, and the
words a trend uses for its moves. Adding a metric is one decorated function and its registration:

    @metric(name="power.peak", unit="W", direction=Direction.LOWER, threshold=Threshold(relative=0.05))
    def peak_power(r: Round, c: CaseResult | None) -> float | None:
        return r.telemetry.get("peak_power_w")

    registry = default_registry().with_metrics(peak_power)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from perfci.format.model import CaseResult, Direction, Round

# a round's value of a metric; the case is None while the case's own metrics are being derived (derive.py)
RoundValue = Callable[[Round, CaseResult | None], float | None]

# how the case's value is made from its rounds: by derive.py's own statistics for the metric (latency's pooled
# quantiles, rates off the median, the process's memory marks), or by the generic rule (median of the per-round
# values; its 95% interval for a timed metric, the rounds' range otherwise)
BESPOKE = "bespoke"
FROM_ROUNDS = "rounds"

SLOWER = ("slower", "faster")
GREW = ("grew", "shrank")
WORSE = ("worse", "better")


@dataclass(frozen=True)
class Threshold:
    """A metric's default practical threshold: a relative change (`relative` on CPU cases, `gpu` on GPU cases;
    a launch-bound GPU case takes the CPU's figure when `host_set`: the host sets its latency), or an absolute
    one (`absolute=True`): `of_tolerance` times the case's tolerance for the metric where the case records one
    (`tolerance_of`), else `relative` in the metric's unit."""

    relative: float = 0.03
    gpu: float | None = None
    host_set: bool = True
    absolute: bool = False
    of_tolerance: float | None = None

    def default(self, gpu: bool, launch_bound: bool, tolerance: float | None = None) -> float:
        if self.absolute and self.of_tolerance is not None and tolerance is not None:
            return self.of_tolerance * tolerance
        if not gpu or self.gpu is None or (launch_bound and self.host_set):
            return self.relative
        return self.gpu


@dataclass(frozen=True)
class MetricDef:
    """One metric's definition (module docstring). `round_value` None: reported only (derived from others,
    like `%` of peak, or describing noise); such a metric is never compared per round."""

    name: str
    unit: str
    direction: Direction
    round_value: RoundValue | None = None
    timed: bool = True  # True: statistical rule on per-round values; False: tolerance rule
    threshold: Threshold = field(default_factory=Threshold)
    family: str = ""  # "" : the name's first dotted part
    compared: bool = False  # compared by default (DecisionSettings.metrics)
    case_value: str = FROM_ROUNDS  # BESPOKE or FROM_ROUNDS
    column: str = ""  # its column title in run tables ("": no column of its own)
    history_rounds: bool | None = None  # the store keeps its round statistics (None: when timed and comparable)
    moves: tuple[str, str] = WORSE  # how a trend says a move, worse then better

    def __post_init__(self) -> None:
        if not self.family:
            object.__setattr__(self, "family", self.name.split(".", 1)[0])
        if self.history_rounds is None:
            object.__setattr__(self, "history_rounds", self.timed and self.round_value is not None)

    @property
    def comparable(self) -> bool:
        return self.round_value is not None

    def values(self, r: Round, c: CaseResult | None) -> float | None:
        return self.round_value(r, c) if self.round_value is not None else None


def metric(
    *,
    name: str,
    unit: str,
    direction: Direction,
    timed: bool = True,
    threshold: Threshold | None = None,
    family: str = "",
    compared: bool = False,
    case_value: str = FROM_ROUNDS,
    column: str = "",
    history_rounds: bool | None = None,
    moves: tuple[str, str] = WORSE,
) -> Callable[[RoundValue], MetricDef]:
    """Decorator: the function (a round's value of the metric) becomes the metric's definition."""

    def define(round_value: RoundValue) -> MetricDef:
        return MetricDef(
            name, unit, direction, round_value, timed, threshold or Threshold(), family, compared, case_value,
            column, history_rounds, moves,
        )  # fmt: skip

    return define


def reported(
    *, name: str, unit: str, direction: Direction, timed: bool = True, moves: tuple[str, str] = WORSE
) -> MetricDef:
    """A metric that is reported but never compared per round (no round value; derive.py makes it)."""
    return MetricDef(name, unit, direction, None, timed, case_value=BESPOKE, moves=moves)


@dataclass(frozen=True)
class MetricRegistry(Mapping[str, MetricDef]):
    """The metrics perfci knows, by name, in definition order. Immutable: `with_metrics` makes a new registry."""

    definitions: tuple[MetricDef, ...]
    _by_name: Mapping[str, MetricDef] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name = {d.name: d for d in self.definitions}
        if len(by_name) != len(self.definitions):
            seen = [d.name for d in self.definitions]
            twice = next(n for n in seen if seen.count(n) > 1)
            raise ValueError(f"metric {twice!r} is defined twice")
        object.__setattr__(self, "_by_name", MappingProxyType(by_name))

    def __getitem__(self, name: str) -> MetricDef:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def __hash__(self) -> int:
        return hash(self.definitions)

    def with_metrics(self, *definitions: MetricDef) -> MetricRegistry:
        return MetricRegistry(self.definitions + definitions)

    def comparable(self, name: str) -> MetricDef:
        """A comparable metric's definition; ValueError naming the known ones otherwise."""
        d = self._by_name.get(name)
        if d is None or not d.comparable:
            known = ", ".join(n for n, x in self._by_name.items() if x.comparable)
            raise ValueError(f"unknown metric {name!r}; known: {known}")
        return d

    def direction(self, name: str) -> Direction:
        """Which way is better for a metric (lower when the name is unknown, as for latency)."""
        d = self._by_name.get(name)
        return d.direction if d is not None else Direction.LOWER

    def compared_by_default(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.definitions if d.compared)

    def families(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(d.family for d in self.definitions))

    def threshold_keys(self) -> frozenset[str]:
        """What a configured threshold may name: a metric or a family of metrics."""
        return frozenset(self._by_name) | frozenset(self.families())

    def absolute_threshold_keys(self) -> frozenset[str]:
        """The threshold keys whose threshold is in the metric's own unit, not a relative change: each metric with
        an absolute threshold, and each family whose metrics all have one (`accuracy`)."""
        absolute = {d.name for d in self.definitions if d.threshold.absolute}
        families = {f for f in self.families() if all(d.name in absolute for d in self.definitions if d.family == f)}
        return frozenset(absolute | families)

    def columns(self) -> tuple[MetricDef, ...]:
        """The metrics with a run-table column of their own, in definition order."""
        return tuple(d for d in self.definitions if d.column)

    def from_rounds(self) -> tuple[MetricDef, ...]:
        """The metrics whose case value the generic rule makes from the rounds."""
        return tuple(d for d in self.definitions if d.case_value == FROM_ROUNDS and d.comparable)
