"""Import a pytest-benchmark JSON file (`pytest --benchmark-json=F --benchmark-save-data`) as perfci results.

Each benchmark becomes one case with ONE round (pytest-benchmark measures in the test process, so there is no
process-level replication: comparisons of imported files say so through wide intervals, never a false
certainty). Raw per-round timings (`stats.data`, seconds per call) are required: without them no statistic
could be recomputed, so the file is refused with a hint to add `--benchmark-save-data`.
Case id: `<test module stem>.<test name>[params]@cpu`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perfci.errors import ResultsFormatError
from perfci.metrics import case_metrics
from perfci.model import CaseResult, CaseSpec, CaseStatus, GitInfo, ParamValue, Round, RunResult


def _param_value(v: object) -> ParamValue:
    return v if isinstance(v, str | int | float | bool) else json.dumps(v)


def _case(bench: dict[str, Any], source: str, index: int) -> CaseResult:
    fullname = str(bench.get("fullname") or bench.get("name") or f"benchmark{index}")
    module = Path(fullname.split("::", 1)[0]).stem if "::" in fullname else "pytest_benchmark"
    name = str(bench.get("name", fullname)).split("[", 1)[0]
    params = {k: _param_value(v) for k, v in (bench.get("params") or {}).items()}
    stats = bench.get("stats") or {}
    data = stats.get("data")
    if not data:
        raise ResultsFormatError(
            f"{source}: benchmark {fullname!r} has no raw timings (stats.data).",
            hint="run pytest with --benchmark-save-data",
        )
    iterations = int(stats.get("iterations") or 1)
    rnd = Round(
        index=0,
        pid=0,
        iterations=iterations,
        samples=tuple(float(d) * iterations for d in data),
        warmup_s=0.0,
        stop_reason="imported",
        threads=0,
        telemetry={"imported_from": "pytest-benchmark", "fullname": fullname},
    )
    spec = CaseSpec(workload=f"{module}.{name}", params=params, device="cpu", source=source, suite=module)
    return CaseResult(spec, CaseStatus.OK, (rnd,), case_metrics((rnd,), None, None))


def import_pytest_benchmark(path: Path) -> RunResult:
    try:
        doc = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsFormatError(f"{path}: cannot read ({exc}).") from None
    except json.JSONDecodeError as exc:
        raise ResultsFormatError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg}).") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise ResultsFormatError(f"{path}: not a pytest-benchmark JSON file (no 'benchmarks' list).")
    commit = doc.get("commit_info") or {}
    when = str(doc.get("datetime") or "1970-01-01T00:00:00")
    stamp = when.replace("+00:00", "")[:26]
    stamp = stamp if stamp.endswith("Z") else stamp + "Z"
    cases = tuple(_case(b, str(path), i) for i, b in enumerate(doc["benchmarks"]))
    return RunResult(
        run_id=f"pytest-benchmark-{path.stem}",
        started_at=stamp,
        finished_at=stamp,
        fingerprint={
            "imported_from": "pytest-benchmark",
            "machine_info": doc.get("machine_info") or {},
            "cpu_model": (doc.get("machine_info") or {}).get("cpu", {}).get("brand_raw"),
        },
        git=GitInfo(commit.get("id"), commit.get("branch"), commit.get("dirty")) if commit else None,
        settings={"imported": True, "pytest_benchmark_version": doc.get("version")},
        cases=cases,
    )
