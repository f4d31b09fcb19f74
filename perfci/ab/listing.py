"""Each side's cases for an A/B: listed in a subprocess with the side's environment (its own code imported), the
files that do not import there named, and the two listings matched (a pytest file that does not collect on one
side takes the other side's ids).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perfci.ab.revisions import Side
from perfci.errors import InfrastructureError, WorkloadDefinitionError
from perfci.format.model import CaseError, CaseResult, CaseSpec, CaseStatus
from perfci.workloads.discovery import PYTEST_PREFIX
from perfci.workloads.pytest_cases import UNCOLLECTED_TAG

_LIST_SCRIPT = """
import json, sys
from perfci.errors import WorkloadDefinitionError
from perfci.workloads.discovery import cases_from_sources
rows, failed = [], {}
for source in json.loads(sys.argv[1]):  # one at a time: a file that does not import is named, the others listed
    try:
        specs = cases_from_sources([source])
    except WorkloadDefinitionError as exc:
        failed[source] = exc.message
        continue
    rows += [dict(workload=s.workload, params=s.params, device=s.device, source=s.source, tags=list(s.tags),
                  suite=s.suite) for s in specs]
print("PERFCI_FAILED " + json.dumps(failed))
print("PERFCI_CASES " + json.dumps(rows))
"""


@dataclass(frozen=True)
class Listing:
    """One side's cases, and the sources that could not be listed there (source -> why)."""

    specs: list[CaseSpec]
    failed: dict[str, str] = field(default_factory=dict)


def list_cases(side: Side, sources: list[str], python: str | None = None) -> Listing:
    """Discover the side's cases in a subprocess with the side's environment (its own code is imported); a source
    that does not import there is named in `failed`, and the others are listed."""
    cmd = [python or sys.executable, "-c", _LIST_SCRIPT, json.dumps(sources)]
    try:
        proc = subprocess.run(cmd, cwd=side.root, env=side.env, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        raise InfrastructureError(f"listing the cases of {side.label} failed: {exc}.") from None
    line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("PERFCI_CASES ")), None)
    if proc.returncode != 0 or line is None:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise WorkloadDefinitionError(f"cannot list the cases of {side.label}: {tail}")
    rows: list[dict[str, Any]] = json.loads(line[len("PERFCI_CASES ") :])
    failed = next((ln for ln in proc.stdout.splitlines() if ln.startswith("PERFCI_FAILED ")), None)
    return Listing(
        [CaseSpec(**{**r, "tags": tuple(r["tags"])}) for r in rows],
        json.loads(failed[len("PERFCI_FAILED ") :]) if failed is not None else {},
    )


def relative_source(source: str, side: Side) -> Path:
    """A source (workload file, `pytest:` file or folder) as a path in the side's checkout, to match across sides."""
    path = Path(source.removeprefix(PYTEST_PREFIX))
    try:
        return path.resolve().relative_to(side.root.resolve())
    except ValueError:
        return path


def unlisted_cases(side: Side, failed: dict[str, str], other: Side, other_specs: list[CaseSpec]) -> list[CaseResult]:
    """`error` results, on `side`, for the cases the other side lists from a file that does not import on `side`
    (a pull request that breaks one workload file): its other files are still measured and compared."""
    broken = {relative_source(src, side): why for src, why in failed.items()}
    out = []
    for spec in other_specs:
        where = relative_source(spec.source, other)
        why = next((w for p, w in broken.items() if where == p or p in where.parents), None)
        if why is not None:
            out.append(CaseResult.of(spec, CaseStatus.ERROR, errors=(CaseError("raised", f"{side.label}: {why}"),)))
    return out


def adopt_uncollected(specs: list[CaseSpec], side: Side, other_specs: list[CaseSpec], other: Side) -> list[CaseSpec]:
    """`specs` with the cases of each pytest file that does not collect on `side` (read from its text, tagged
    UNCOLLECTED_TAG) replaced by the other side's cases of that file, where it collects there: the same ids on
    both sides (a parametrised test's cases, which the text cannot name), each an `error` on `side` when its
    set-up meets the file's error. Files broken on both sides, or only on `side`, keep the ids read from the text."""
    collected: dict[Path, list[CaseSpec]] = {}
    for spec in other_specs:
        if spec.source.startswith(PYTEST_PREFIX) and UNCOLLECTED_TAG not in spec.tags:
            collected.setdefault(relative_source(spec.source, other), []).append(spec)
    out: list[CaseSpec] = []
    adopted: set[Path] = set()
    for spec in specs:
        rel = relative_source(spec.source, side)
        if UNCOLLECTED_TAG not in spec.tags or rel not in collected:
            out.append(spec)
        elif rel not in adopted:
            adopted.add(rel)
            here = f"{PYTEST_PREFIX}{(side.root / rel).resolve()}"
            out += [replace(s, source=here) for s in collected[rel]]
    return out


def check_listings(base: Listing, head: Listing, sides: tuple[Side, Side]) -> None:
    """What stays an error of the A/B (exit 2): a side where nothing could be listed (nothing would be compared),
    and a file that imports on neither side."""
    for listing, side in ((base, sides[0]), (head, sides[1])):
        if listing.failed and not listing.specs:
            raise WorkloadDefinitionError(
                f"cannot list the cases of {side.label}: {next(iter(listing.failed.values()))}"
            )
    on_base = {relative_source(src, sides[0]) for src in base.failed}
    for src, why in head.failed.items():
        if relative_source(src, sides[1]) in on_base:
            raise WorkloadDefinitionError(f"cannot list the cases of either revision: {why}")
