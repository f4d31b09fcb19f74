"""Matching case ids that name one pytest test by different paths.

A pytest test's case id starts with its file's path (`bench/test_b.py::test_x[n=1]@cpu`). perfci now writes
that path relative to the project root (perfci/workloads/pytest_ids.py); files written before were relative to
pytest's rootdir, which moved with the command line (`test_b.py::...`, `x/bench/test_b.py::...`). A results
file does not record the rootdir it was written under, so no migration of the file alone can rewrite its ids;
the comparison matches them instead: a baseline case with no candidate of its id is matched to the one
candidate case, itself without a baseline of its id, whose id differs only in the leading folders of the file's
path (one path ends with the other, folder by folder). Ambiguous ids (two candidates fit) are left unmatched.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

SEPARATOR = "::"


def test_file_and_rest(case_id: str) -> tuple[tuple[str, ...], str] | None:
    """(the folders and name of the test file, the rest of the id) of a pytest case id; None for other ids."""
    path, sep, rest = case_id.partition(SEPARATOR)
    if not sep or not path.endswith(".py"):
        return None
    return tuple(p for p in path.split("/") if p not in ("", ".")), rest


def _ends_with(longer: tuple[str, ...], shorter: tuple[str, ...]) -> bool:
    return len(longer) >= len(shorter) and longer[len(longer) - len(shorter) :] == shorter


def moved_test_ids(baseline_ids: Iterable[str], candidate_ids: Iterable[str]) -> dict[str, str]:
    """Baseline id -> candidate id, for the pytest tests named by another path on each side (module docstring).

    Only ids absent from the other side take part; each candidate is matched at most once."""
    base, cand = list(baseline_ids), list(candidate_ids)
    base_set, cand_set = set(base), set(cand)
    by_rest: defaultdict[str, list[tuple[str, tuple[str, ...]]]] = defaultdict(list)
    for cid in cand:
        parts = test_file_and_rest(cid) if cid not in base_set else None
        if parts is not None:
            by_rest[parts[1]].append((cid, parts[0]))
    out: dict[str, str] = {}
    taken: set[str] = set()
    for bid in base:
        parts = test_file_and_rest(bid) if bid not in cand_set else None
        if parts is None:
            continue
        path, rest = parts
        fits = [c for c, p in by_rest.get(rest, ()) if _ends_with(p, path) or _ends_with(path, p)]
        if len(fits) == 1 and fits[0] not in taken:
            out[bid] = fits[0]
            taken.add(fits[0])
    return out
