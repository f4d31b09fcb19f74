"""`perfci history ingest` at speed: files loaded in worker processes, rows written in bulk. The rows
stored must be exactly those of the plain definition below, on the parallel path (CLI) and in-process
(`HistoryStore.ingest_many`); a bad file among many still stores nothing and is the one named."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.cli import app
from perfci.errors import ResultsFormatError
from perfci.format.model import CaseError, CaseResult, CaseStatus, Metric, RunResult
from perfci.format.schema import dump_results
from perfci.metrics.registry import default_registry, round_values
from perfci.store.history import HistoryStore, prepare_run
from tests.store_cases import expected_rows, many_runs, stored_rows


def write(runs: list[RunResult], folder: Path) -> list[str]:
    paths = []
    for run in runs:
        path = folder / f"{run.run_id}.json"
        dump_results(run, path)
        paths.append(str(path))
    return paths


def test_expected_rows_is_the_plain_definition() -> None:
    """The reference the other tests compare with: one row per ok case and metric, the round statistics of
    timed metrics from the registry's per-round values (written out here, not taken from the store)."""
    (run,) = many_runs(1)
    rows = expected_rows(run)
    ok = [c for c in run.cases if c.status is CaseStatus.OK]
    assert len(rows) == sum(len(c.metrics) for c in ok) and len(ok) < len(run.cases)
    case = ok[0]
    logs = [math.log(v) for v in round_values(case, default_registry()["latency.median"]).values()]
    (median,) = [r for r in rows if r[0] == case.id and r[1] == "latency.median"]
    assert median[7] == len(logs) == 5
    assert median[8] == pytest.approx(sum(logs) / 5, rel=1e-12)
    assert all(r[7] is None for r in rows if r[1] == "memory.peak_rss")


def test_cli_ingest_in_worker_processes_stores_exactly_the_rows(tmp_path: Path) -> None:
    runs = many_runs(7)
    db = f"sqlite:///{tmp_path / 'h.db'}"
    res = CliRunner().invoke(app, ["history", "ingest", *write(runs, tmp_path), "--db", db, "--runner", "cpu-test"])
    assert res.exit_code == 0, res.output
    assert "ingested 7 run(s), skipped 0" in res.stderr
    stored = stored_rows(db)
    assert list(stored) == [(r.run_id, "cpu-test") for r in runs]  # in file order
    for run in runs:
        header, rows = stored[(run.run_id, "cpu-test")]
        git = run.git
        assert git is not None
        assert header == (git.commit, git.branch, git.dirty, run.started_at, run.finished_at,
                          json.dumps(run.fingerprint, sort_keys=True))  # fmt: skip
        assert rows == expected_rows(run)  # exactly: same values, same order
    paths = write(runs[:3], tmp_path)
    again = CliRunner().invoke(app, ["history", "ingest", *paths, "--db", db, "--runner", "cpu-test"])
    assert again.exit_code == 0 and "ingested 0 run(s), skipped 3" in again.stderr


def test_ingest_many_in_process_stores_the_same_rows(tmp_path: Path) -> None:
    runs = many_runs(3)
    db = f"sqlite:///{tmp_path / 'h.db'}"
    assert HistoryStore(db).ingest_many((r, "cpu-test") for r in runs) == (3, 0)
    stored = stored_rows(db)
    assert [stored[(r.run_id, "cpu-test")][1] for r in runs] == [expected_rows(r) for r in runs]


def test_a_bad_file_after_the_first_ones_stores_nothing_and_is_named(tmp_path: Path) -> None:
    """Files 6 and 7 of 8 are bad: the store was opened (after the first 4), nothing is in it, and the error
    names the first bad file in command-line order, however the workers' loads finish."""
    paths = write(many_runs(8), tmp_path)
    Path(paths[5]).write_text('{"schema": "perfci.results", "schema_version": 1')
    Path(paths[6]).write_text("{}")
    db = tmp_path / "h.db"
    res = CliRunner().invoke(app, ["history", "ingest", *paths, "--db", f"sqlite:///{db}", "--runner", "cpu-test"])
    assert res.exit_code == 2
    assert res.stderr.startswith(f"error: {paths[5]}: ") and paths[6] not in res.stderr
    assert db.exists() and stored_rows(f"sqlite:///{db}") == {}


def test_an_interrupted_run_among_many_is_refused_with_its_hint(tmp_path: Path) -> None:
    runs = many_runs(6)
    runs[5] = replace(runs[5], settings={**runs[5].settings, "complete": False})
    paths = write(runs, tmp_path)
    db = f"sqlite:///{tmp_path / 'h.db'}"
    res = CliRunner().invoke(app, ["history", "ingest", *paths, "--db", db, "--runner", "cpu-test"])
    assert res.exit_code == 2
    assert res.stderr.startswith(f"error: {paths[5]}: the run did not complete")
    assert "re-run it, or compare it directly" in res.stderr  # the hint survived the worker process
    assert stored_rows(db) == {}


def _with_value(run: RunResult, value: float) -> RunResult:
    case = run.cases[0]
    bad = replace(case, metrics=(Metric("latency.median", "s", case.metrics[0].direction, value), *case.metrics[1:]))
    return replace(run, cases=(bad, *run.cases[1:]))


def test_a_non_finite_value_is_refused_unless_the_run_is_already_stored(tmp_path: Path) -> None:
    """Through the Python API a run may hold a NaN (a file cannot): refused when it would be written, as
    before; a run already stored is skipped without looking at its values."""
    good, other = many_runs(2)
    store = HistoryStore(f"sqlite:///{tmp_path / 'h.db'}")
    assert store.ingest(good, "cpu-test")
    assert store.ingest_many([(_with_value(good, math.nan), "cpu-test")]) == (0, 1)
    with pytest.raises(ResultsFormatError, match="is not a finite number"):
        store.ingest(_with_value(other, math.inf), "cpu-test")
    assert list(stored_rows(store.label)) == [(good.run_id, "cpu-test")]
    assert prepare_run(_with_value(other, math.nan)).refusal is not None


def test_an_integer_past_64_bits_is_stored_as_a_float(tmp_path: Path) -> None:
    """A results file may hold an integer of any size where a number is asked for (JSON has no limit; found by
    fuzzing: a memory figure of 21 digits made SQLite's driver raise OverflowError). The store takes it as the
    float it is, through the file and the CLI as through the API."""
    (run,) = many_runs(1)
    huge = 132500360562815775502
    big = _with_value(run, huge)  # type: ignore[arg-type]  # what a file's integer literal decodes to
    (path,) = write([big], tmp_path)
    url = f"sqlite:///{tmp_path / 'h.db'}"
    result = CliRunner().invoke(app, ["history", "ingest", path, "--db", url, "--runner", "cpu-test"])
    assert result.exit_code == 0, result.output
    ((_, rows),) = stored_rows(url).values()
    assert rows[0][:2] == (run.cases[0].id, "latency.median") and rows[0][4] == float(huge)


def test_error_cases_are_not_stored() -> None:
    (run,) = many_runs(1)
    broken = CaseResult.of(run.cases[0].spec, CaseStatus.ERROR, (), (), (CaseError("crash", "worker died"),))
    rows = prepare_run(replace(run, cases=(broken,))).rows
    assert rows == ()
