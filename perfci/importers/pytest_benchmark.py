"""Import a pytest-benchmark JSON file (`pytest --benchmark-json=F --benchmark-save-data`) as perfci results.

Each benchmark becomes one case. Its raw timings (`stats.data`, seconds per call, in the order measured) are
split into up to IMPORT_BLOCKS consecutive blocks of at least MIN_BLOCK timings, one round each, so that a
comparison can estimate the noise and decide; the rounds are marked `in_process` (pytest-benchmark measures in
the test process, so the blocks share one process and the in-process job noise of the comparison covers what
they cannot show) and `imported_block`. Fewer than 2 * MIN_BLOCK timings make one round, which a comparison calls
`inconclusive` ("too few rounds to estimate the noise"). pytest-benchmark's own summary (`stats` without `data`)
is kept in the first round's telemetry. Raw timings are required: without them no statistic could be
recomputed, so the file is refused with a hint to add `--benchmark-save-data`.
Case id: the test's pytest node id then `@cpu` (`bench/test_b.py::test_sum[100]@cpu`), the id the pytest plugin and
`perfci ab --pytest` give the same test, so an imported session is a baseline for either. pytest-benchmark writes
the node id relative to its session's rootdir; where that was not the project root, the comparison still pairs the
two paths (perfci/compare/case_ids.py). A benchmark without a node id is named `pytest_benchmark.<name>@cpu`.
Files imported by perfci 0.1.0 before this named a case `<module stem>.<test name>[params]@cpu`: import the
pytest-benchmark file again to compare them with the plugin's results.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from perfci.errors import ResultsFormatError
from perfci.format.jsonfile import parse_json_text, read_bytes
from perfci.format.model import (
    MAX_SECONDS,
    MIN_SECONDS,
    CaseResult,
    CaseSpec,
    CaseStatus,
    GitInfo,
    ParamValue,
    Round,
    RunResult,
)
from perfci.format.schema import RESULTS
from perfci.metrics import case_metrics
from perfci.workloads.pytest_cases import GROUP_TAG, PYTEST_SUITE


def _param_value(v: object) -> ParamValue:
    return v if isinstance(v, str | int | float | bool) else json.dumps(v)


def _table(value: object, source: str, where: str) -> dict[str, Any]:
    """An optional JSON object (absent or null: empty); anything else is refused, naming the place."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ResultsFormatError(f"{source}: invalid pytest-benchmark file at {where}: not an object.")
    return value


def _utc(value: object, source: str) -> str:
    """pytest-benchmark's `datetime` (ISO 8601; naive means UTC, as pytest-benchmark writes it) in UTC with `Z`;
    absent, null or empty: the epoch. Another offset is converted (it was written with the offset and a `Z` behind it,
    which the results schema then refused); anything else is refused, naming the field."""
    if value is None or value == "":
        return "1970-01-01T00:00:00Z"
    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        if when.tzinfo is not None:
            when = when.astimezone(UTC).replace(tzinfo=None)
    except ValueError:
        raise ResultsFormatError(
            f"{source}: invalid pytest-benchmark file at datetime: {str(value)[:60]!r} is not an ISO 8601 time."
        ) from None
    except OverflowError:  # 9999-12-31T23:00:00-05:00 is past the last date in UTC
        raise ResultsFormatError(
            f"{source}: invalid pytest-benchmark file at datetime: {str(value)[:60]!r} is out of range in UTC."
        ) from None
    return when.isoformat() + "Z"


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _samples(stats: dict[str, Any], source: str, where: str, fullname: str) -> tuple[float, ...]:
    """The raw timings (seconds per call) times the iterations: seconds per sample, each finite and > 0."""
    data = stats.get("data")
    if not data:
        raise ResultsFormatError(
            f"{source}: benchmark {fullname!r} has no raw timings (stats.data).",
            hint="run pytest with --benchmark-save-data",
        )
    if not isinstance(data, list):
        raise ResultsFormatError(f"{source}: invalid pytest-benchmark file at {where}/data: not a list.")
    iterations = stats.get("iterations")
    iterations = 1 if iterations is None else iterations  # absent: one call a timing; 0 is refused, not taken as 1
    if isinstance(iterations, bool) or not isinstance(iterations, int) or not 1 <= iterations <= 2**53:
        raise ResultsFormatError(
            f"{source}: invalid pytest-benchmark file at {where}/iterations: {iterations!r} is not a positive integer."
        )
    samples = []
    for j, d in enumerate(data):
        number = isinstance(d, int | float) and not isinstance(d, bool)
        value = float(d) * iterations if number else math.nan
        if not (math.isfinite(value) and value > 0):
            times = f" s x {iterations} iterations" if number and math.isfinite(float(d)) and iterations > 1 else ""
            raise ResultsFormatError(
                f"{source}: invalid pytest-benchmark file at {where}/data/{j}: {d!r}{times} is not a finite time > 0."
            )
        if value > MAX_SECONDS:  # named here, not as "the results document to write"
            raise ResultsFormatError(
                f"{source}: invalid pytest-benchmark file at {where}/data/{j}: {d!r} s x {iterations} iteration(s) is "
                f"more than perfci's largest sample, {MAX_SECONDS:g} s."
            )
        if value < MIN_SECONDS:
            raise ResultsFormatError(
                f"{source}: invalid pytest-benchmark file at {where}/data/{j}: {d!r} s is below perfci's resolution "
                f"of {MIN_SECONDS:g} s a sample."
            )
        samples.append(value)
    return tuple(samples)


IMPORT_BLOCKS = 5
MIN_BLOCK = 3


def blocks(samples: tuple[float, ...]) -> list[tuple[float, ...]]:
    """`samples` in consecutive blocks: as many as IMPORT_BLOCKS allows with MIN_BLOCK each, as even as they go."""
    k = max(1, min(IMPORT_BLOCKS, len(samples) // MIN_BLOCK))
    size, extra = divmod(len(samples), k)
    out, start = [], 0
    for i in range(k):
        end = start + size + (1 if i < extra else 0)
        out.append(samples[start:end])
        start = end
    return out


def _summary(stats: dict[str, Any]) -> dict[str, float | int]:
    """pytest-benchmark's own statistics of the benchmark (numbers only), as it reported them."""
    return {
        str(k): v
        for k, v in stats.items()
        if k != "data" and isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    }


def _case(bench: object, source: str, index: int) -> CaseResult:
    bench = _table(bench, source, f"benchmarks/{index}")
    fullname = str(bench.get("fullname") or bench.get("name") or f"benchmark{index}")
    raw_params = _table(bench.get("params"), source, f"benchmarks/{index}/params")
    params = {str(k): _param_value(v) for k, v in raw_params.items()}
    group = bench.get("group")
    stats = _table(bench.get("stats"), source, f"benchmarks/{index}/stats")
    samples = _samples(stats, source, f"benchmarks/{index}/stats", fullname)
    parts = blocks(samples)
    rounds = tuple(
        Round(
            index=i,
            pid=0,
            iterations=1 if stats.get("iterations") is None else stats["iterations"],
            samples=part,
            warmup_s=0.0,
            stop_reason="imported",
            threads=0,
            telemetry={
                "imported_from": "pytest-benchmark",
                "fullname": fullname,
                **({"pytest_benchmark_params": params} if params and i == 0 else {}),
                "in_process": True,
                "imported_block": [i, len(parts)],
                **({"pytest_benchmark_stats": _summary(stats)} if i == 0 else {}),
            },
        )
        for i, part in enumerate(parts)
    )
    if "::" in fullname:  # the node id already holds the parameters (`test_sum[100]`)
        spec = CaseSpec(workload=fullname, params={}, device="cpu", source=source, suite=PYTEST_SUITE,
                        tags=(f"{GROUP_TAG}{group}",) if group else ())  # fmt: skip
    else:
        name = f"pytest_benchmark.{fullname.split('[', 1)[0]}"
        spec = CaseSpec(workload=name, params=params, device="cpu", source=source, suite=PYTEST_SUITE)
    return CaseResult.of(spec, CaseStatus.OK, rounds, case_metrics(rounds, None, None))


KNOWN_MAJOR_VERSIONS = (3, 4, 5)  # the pytest-benchmark file formats perfci reads and was tested with


def version_warning(run: RunResult) -> str | None:
    """A warning for a file written by a pytest-benchmark version perfci does not know (its fields may mean other
    things), None for a known one or a file that records none."""
    text = run.settings.get("pytest_benchmark_version")
    if not isinstance(text, str) or not text:
        return None
    major = text.split(".", 1)[0]
    if major.isdigit() and int(major) in KNOWN_MAJOR_VERSIONS:
        return None
    known = ", ".join(f"{m}.x" for m in KNOWN_MAJOR_VERSIONS)
    return (
        f"written by pytest-benchmark {text[:20]!r}, a version perfci does not know (it reads {known}): check the "
        "import"
    )


def import_pytest_benchmark(path: Path) -> RunResult:
    """The file as a perfci run; anything unreadable, malformed or non-finite is one ResultsFormatError."""
    try:
        text = read_bytes(path, "pytest-benchmark").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsFormatError(f"{path}: cannot read ({exc}).") from None
    doc = parse_json_text(text, str(path), "pytest-benchmark")
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise ResultsFormatError(f"{path}: not a pytest-benchmark JSON file (no 'benchmarks' list).")
    if not doc["benchmarks"]:  # written by a session that measured nothing: an empty baseline compares nothing
        raise ResultsFormatError(f"{path}: holds no benchmarks (the pytest-benchmark session measured nothing).")
    commit = _table(doc.get("commit_info"), str(path), "commit_info")
    machine = _table(doc.get("machine_info"), str(path), "machine_info")
    cpu = machine.get("cpu")
    stamp = _utc(doc.get("datetime"), str(path))
    cases = tuple(_case(b, str(path), i) for i, b in enumerate(doc["benchmarks"]))
    first: dict[str, int] = {}
    for i, case in enumerate(cases):  # else the results check below names "the results document", not this file
        if (earlier := first.setdefault(case.id, i)) != i:
            raise ResultsFormatError(
                f"{path}: benchmarks {earlier} and {i} have the same name ({case.id!r}); perfci keeps one case per "
                "name.",
            )
    dirty = commit.get("dirty")
    cores = cpu.get("count") if isinstance(cpu, dict) else None
    run = RunResult(
        # the session's content names the run: two sessions of one file name are two runs (the history store
        # skipped the second as "already stored"), and the same file imported twice is one
        run_id=f"pytest-benchmark-{path.stem}-{hashlib.sha256(text.encode()).hexdigest()[:12]}",
        started_at=stamp,
        finished_at=stamp,
        fingerprint={
            "imported_from": "pytest-benchmark",
            "machine_info": machine,
            "cpu_model": _text(cpu.get("brand_raw")) if isinstance(cpu, dict) else None,
            # as perfci's own fingerprint names them (the report showed "OS ?" and "Python ?")
            **(
                {"os": " ".join(str(machine[k]) for k in ("system", "release") if machine.get(k))}
                if machine.get("system")
                else {}
            ),
            **({"machine": str(machine["machine"])} if machine.get("machine") else {}),
            **({"python": str(machine["python_version"])} if machine.get("python_version") else {}),
            # the core count, as perfci's own fingerprint has it: the runner class (`cpu-amd-epyc-2c`) then matches
            # the runs perfci makes on the same machine (it read `cpu-amd-epyc-c`)
            **({"cpu_logical_cores": cores} if isinstance(cores, int) and not isinstance(cores, bool) else {}),
        },
        git=(
            GitInfo(_text(commit.get("id")), _text(commit.get("branch")), dirty if isinstance(dirty, bool) else None)
            if commit
            else None
        ),
        settings={"imported": True, "pytest_benchmark_version": _text(doc.get("version"))},
        cases=cases,
    )
    RESULTS.decode(RESULTS.encode(run), str(path))  # what is written must be a valid results file
    return run
