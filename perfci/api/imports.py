"""Other tools' results as perfci results files."""

from __future__ import annotations

from pathlib import Path

from perfci.errors import UsageError
from perfci.format.model import RunResult
from perfci.format.schema import dump_results
from perfci.importers.pytest_benchmark import import_pytest_benchmark, version_warning


def import_pytest_benchmark_file(source: Path, out: Path) -> RunResult:
    """Convert a pytest-benchmark JSON file and write it as a perfci results file at `out` (never over `source`)."""
    if out.exists() and source.exists() and out.samefile(source):
        raise UsageError(
            f"--out {out} is the pytest-benchmark file being imported: writing it would replace the source",
            hint="give --out another file name",
        )
    run = import_pytest_benchmark(source)
    dump_results(run, out)
    return run


def import_warnings(run: RunResult) -> list[str]:
    """What to tell about an imported file before it is relied on (a format version perfci does not know)."""
    return [w for w in (version_warning(run),) if w]
