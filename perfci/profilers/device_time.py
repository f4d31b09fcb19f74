"""The device clock of a CUDA case: per call, the GPU's busy time, from the GPU's own timestamps.

An activity source (profilers/kineto.py through torch.profiler / CUPTI, or a fake in tests) profiles a few calls
in a slice after the latency samples, each call inside a marked window on the host and followed by a
synchronize, and hands over three lists:

- `Window`s: one per profiled call, the host time range of its marker (a `record_function` range);
- `HostOp`s: host-side operators (aten::addmm) with their correlation id and host start time;
- `Activity`s: what ran on the GPU (kernels, copies, sets), with GPU start and end times (already on the
  host's time line, as CUPTI/Kineto convert them) and the correlation id of the host op that launched it (0
  when unknown).

`calls` attributes each activity to a call: by the host start of its launching op (which window it lies in),
or, with no known op, by its own GPU start (the last window that started before it; the synchronize after each
call keeps a call's activities before the next window). Activities launched outside every window (perfci's own:
an L2 flush, a timing guard, the profiler's) belong to no call: they are excluded by time window, not by name.

A call's busy time is the union of its activities' intervals, so kernels overlapping on two streams are counted
once. `summarize` keeps the calls with the usual number of activities (the mode): calls with fewer, such as
calls whose records a profiling session dropped at its start, are left out and counted, never taken as a
faster call; kept calls whose counts still differ mark the round `unstable`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import median

from perfci.format.model import DeviceTime, KernelTime, Round, sample_seconds
from perfci.metrics.registry import LAUNCH_BOUND_BUSY

TOP_KERNELS = 8  # activities kept per round for the per-kernel table
CUPTI = "cupti"


@dataclass(frozen=True)
class Window:
    call: int
    start_ns: int
    end_ns: int


@dataclass(frozen=True)
class HostOp:
    correlation: int
    start_ns: int


@dataclass(frozen=True)
class Activity:
    name: str
    start_ns: int
    end_ns: int
    correlation: int = 0  # the launching host op's; 0: unknown


@dataclass
class Call:
    """The activities attributed to one profiled call."""

    index: int
    activities: list[Activity]

    @property
    def busy_s(self) -> float:
        return busy_ns(self.activities) / 1e9


def busy_ns(activities: Iterable[Activity]) -> int:
    """The length of the union of the activities' [start, end) intervals."""
    total, reach = 0, None
    for a in sorted(activities, key=lambda x: x.start_ns):
        end = max(a.end_ns, a.start_ns)
        if reach is None or a.start_ns >= reach:
            total += end - a.start_ns
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def _window_of(t_ns: int, windows: Sequence[Window]) -> Window | None:
    for w in windows:
        if w.start_ns <= t_ns <= w.end_ns:
            return w
    return None


def _last_started(t_ns: int, windows: Sequence[Window]) -> Window | None:
    started = [w for w in windows if w.start_ns <= t_ns]
    return max(started, key=lambda w: w.start_ns) if started else None


def calls(windows: Sequence[Window], ops: Iterable[HostOp], activities: Iterable[Activity]) -> list[Call]:
    """Each window's activities (see the module docstring); windows in call order, empty ones included."""
    op_start = {op.correlation: op.start_ns for op in ops}
    by_call: dict[int, list[Activity]] = defaultdict(list)
    for a in activities:
        host = op_start.get(a.correlation) if a.correlation else None
        w = _window_of(host, windows) if host is not None else _last_started(a.start_ns, windows)
        if w is not None:
            by_call[w.call].append(a)
    return [Call(w.call, by_call.get(w.call, [])) for w in sorted(windows, key=lambda w: w.call)]


def summarize(profiled: Sequence[Call], source: str = CUPTI) -> DeviceTime | None:
    """The round's device clock from its profiled calls; None when no call ran anything on the GPU."""
    counts = [len(c.activities) for c in profiled]
    nonzero = [n for n in counts if n > 0]
    if not nonzero:
        return None
    freq = Counter(nonzero)
    usual = max(freq, key=lambda n: (freq[n], n))  # the mode; on a tie the larger count (dropped records shrink it)
    kept = [c for c in profiled if len(c.activities) >= usual]
    dropped = len(profiled) - len(kept)
    per_name: dict[str, list[float]] = defaultdict(list)
    launches: Counter[str] = Counter()
    for c in kept:
        totals: dict[str, float] = defaultdict(float)
        for a in c.activities:
            totals[a.name] += (a.end_ns - a.start_ns) / 1e9
            launches[a.name] += 1
        for name, t in totals.items():
            per_name[name].append(t)
    n = len(kept)
    top = sorted(
        (KernelTime(name, median(ts + [0.0] * (n - len(ts))), launches[name] / n) for name, ts in per_name.items()),
        key=lambda k: (-k.per_call_s, k.name),
    )[:TOP_KERNELS]
    return DeviceTime(
        source=source,
        samples=tuple(sample_seconds(c.busy_s) for c in kept),
        kernels=usual,
        dropped_calls=dropped,
        unstable=len({len(c.activities) for c in kept}) > 1,
        top=tuple(top),
    )


# --- the round plan: where a case's verdict rests on the device clock ---------------------------------------------

STEADY_DEVICE = "device"  # JobCase.steady_clock: the case's verdict rests on its device clock
STEADY_CALLS_FACTOR = 2  # such a round profiles this many times the calls (kineto.calls_for)
STEADY_SAMPLE_SHARE = 0.5  # ... and spends this share of the latency sampling budget (and of min_samples)
MIN_STEADY_SAMPLES = 5  # ... but takes at least this many latency samples (the host rows still need some)


def rests_on_device(rounds: Sequence[Round], lockstep: bool) -> bool:
    """Whether a case's later rounds should spend their time on the device clock: an earlier round had one, and
    either the rounds are lockstep A/B pairs (an A/B settles a CUDA case on `device.time`, ab/orchestrate.py) or
    the GPU was busy for less than half of a call (launch-bound: the latency follows the host)."""
    busy = [
        median(r.device.samples) / lat
        for r in rounds
        if r.device is not None and r.samples and (lat := median(r.per_call)) > 0
    ]
    if not busy:
        return False
    return lockstep or median(busy) < LAUNCH_BOUND_BUSY


# --- the SM clock around a profiled slice -------------------------------------------------------------------------

CLOCK_KEY = "device_clock_sm_mhz"  # Round.telemetry: the SM clock before and after the profiled calls (MHz)
THROTTLE_KEY = "device_clock_throttle"  # ... the clock-event reasons seen then, other than the benign ones
LEFT_OUT_KEY = "device_clock_left_out"  # ... why the round's device clock was left out (a throttled slice)
CYCLES_TOLERANCE = 0.01  # sides whose slice clocks differ by more than this are compared in cycles


def slice_clock(r: Round) -> float | None:
    """The SM clock of the round's profiled slice: the mean of the readings before and after it; None without."""
    values = r.telemetry.get(CLOCK_KEY)
    if not isinstance(values, list | tuple) or not values:
        return None
    if not all(isinstance(v, int | float) and v > 0 for v in values):
        return None
    return sum(values) / len(values)


def left_out(rounds: Iterable[Round]) -> list[str]:
    """Why rounds' device clocks were left out (one entry per such round)."""
    return [str(r.telemetry[LEFT_OUT_KEY]) for r in rounds if r.telemetry.get(LEFT_OUT_KEY)]


@dataclass(frozen=True)
class ClockAdjusted:
    """Per-round device times to compare: as measured, or in cycles expressed at the reference clock."""

    base: dict[int, float]
    cand: dict[int, float]
    note: str = ""


def in_cycles(
    base: dict[int, float],
    cand: dict[int, float],
    base_clock: dict[int, float | None],
    cand_clock: dict[int, float | None],
) -> ClockAdjusted:
    """Device times per round (`base`, `cand`, by round index) compared in cycles (time x SM clock) when the two
    sides' median slice clocks differ by more than CYCLES_TOLERANCE and every round has its clock: each value
    becomes time x its clock / the baseline's median clock, so the figures stay seconds at the baseline's clock.
    Otherwise the times as measured. Cycles assume the kernels scale with the SM clock (compute-bound); a
    memory-bound kernel does not, which is why equal clocks are compared as times."""
    clocks_b = [base_clock.get(i) for i in base]
    clocks_c = [cand_clock.get(i) for i in cand]
    if not clocks_b or not clocks_c or None in clocks_b or None in clocks_c:
        return ClockAdjusted(base, cand)
    ref_b = median([c for c in clocks_b if c is not None])
    ref_c = median([c for c in clocks_c if c is not None])
    if abs(ref_c / ref_b - 1.0) <= CYCLES_TOLERANCE:
        return ClockAdjusted(base, cand)

    def scaled(values: dict[int, float], clocks: dict[int, float | None]) -> dict[int, float]:
        return {i: v * (clocks[i] or ref_b) / ref_b for i, v in values.items()}

    note = f"compared in cycles (time x SM clock): baseline at {ref_b:,.0f} MHz, candidate at {ref_c:,.0f} MHz"
    return ClockAdjusted(scaled(base, base_clock), scaled(cand, cand_clock), note)


def clock_aware(
    base_rounds: Sequence[Round], cand_rounds: Sequence[Round], base: dict[int, float], cand: dict[int, float]
) -> ClockAdjusted:
    """The two sides' per-round device times to compare (`in_cycles`), with a note that says how, and which
    rounds were left out for a throttled slice (the worker leaves their device clock out: engine/case_session)."""
    adjusted = in_cycles(
        base, cand, {r.index: slice_clock(r) for r in base_rounds}, {r.index: slice_clock(r) for r in cand_rounds}
    )
    gone = len(left_out(base_rounds)), len(left_out(cand_rounds))
    notes = [adjusted.note] if adjusted.note else []
    if any(gone):
        notes.append(
            f"{gone[0]} baseline and {gone[1]} candidate round(s) left out: the GPU was throttled around their "
            "profiled calls"
        )
    return ClockAdjusted(adjusted.base, adjusted.cand, "; ".join(notes))
