"""Two speeds by process: pairs of an A/B whose log ratios fall into groups far apart.

Some code runs at one of two speeds depending on the process it runs in (memory layout, allocator state, hash
seeds): one pure-Python test ran at 6.0 or 8.3 ms a call. Within one process it is steady, so every pair of an A/B
looks precise, yet the pairs disagree with each other by the ratio of the two speeds: a pair of a fast base and a
slow head reads +38%, the reverse -28%, two alike 0%. An A/B of such a case compares draws of the modes, not the
code; `split_modes` tells such pairs from an ordinary spread (which a genuine change shifts as a whole).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

MIN_PAIRS = 4  # fewer pairs cannot show two groups
MIN_GROUP = 2  # values in a group, at least (one far value is an outlier, which the trimmed estimate handles)
MIN_GAP = math.log1p(0.05)  # neighbouring groups at least 5% apart
GAP_OVER_SPREAD = 2.0  # and at least twice the wider group's own range apart


@dataclass(frozen=True)
class Modes:
    """The groups the values fell into: each group's mean (log scale) and size, lowest first."""

    centres: tuple[float, ...]
    sizes: tuple[int, ...]


def split_modes(log_ratios: Sequence[float]) -> Modes | None:
    """The groups of `log_ratios` (one per pair) when they fall into two or more, else None.

    Sorted, the values are cut wherever neighbours are at least MIN_GAP apart. They are in modes when at least two
    of the pieces hold MIN_GROUP values or more, and each gap between such neighbouring pieces is at least
    GAP_OVER_SPREAD times the wider one's range. A lone far value does not count as a group."""
    xs = sorted(x for x in log_ratios if math.isfinite(x))
    if len(xs) < MIN_PAIRS:
        return None
    pieces: list[list[float]] = [[xs[0]]]
    for a, b in itertools.pairwise(xs):
        if b - a >= MIN_GAP:
            pieces.append([b])
        else:
            pieces[-1].append(b)
    groups = [p for p in pieces if len(p) >= MIN_GROUP]
    if len(groups) < 2:
        return None
    for left, right in itertools.pairwise(groups):
        widest = max(left[-1] - left[0], right[-1] - right[0])
        if right[0] - left[-1] < GAP_OVER_SPREAD * widest:
            return None
    return Modes(tuple(math.fsum(g) / len(g) for g in groups), tuple(len(g) for g in groups))
