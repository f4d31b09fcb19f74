"""Paths perfci cannot use (an output under a regular file, a corrupt store): one line and exit 2, no traceback;
a full disk is an infrastructure failure (3)."""

from __future__ import annotations

import errno
from pathlib import Path

from typer.testing import CliRunner

from perfci.cli import app
from perfci.cli.app import file_error
from perfci.errors import InfrastructureError, UsageError
from perfci.format.schema import dump_results
from tests.conftest import make_case, make_run
from tests.store_cases import history_runs

DATA = Path(__file__).parent.parent / "data" / "workloads"


def test_run_refuses_an_unwritable_output_folder_before_measuring(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    res = CliRunner().invoke(app, ["run", str(DATA / "tiny.py"), "--out", str(blocker / "out"), "--rounds", "2"])
    assert res.exit_code == 2, res.output
    assert f"--out {blocker / 'out'}: cannot write there ({blocker} is not a folder)" in res.stderr
    assert "Traceback" not in res.output and "measured" not in res.stderr  # refused before any worker ran


def test_report_outputs_under_a_file_are_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    results = tmp_path / "r.json"
    dump_results(make_run([make_case("alpha", 1e-3)]), results)
    res = CliRunner().invoke(app, ["report", str(results), "-o", str(blocker / "r.html")])
    said = f"{blocker / 'r.html'}: a file is in the way of the folder to write in."
    assert res.exit_code == 2 and said in res.stderr and "Traceback" not in res.output
    db = f"sqlite:///{tmp_path / 'h.db'}"
    files = []
    for run in history_runs(4):
        path = tmp_path / f"{run.run_id}.json"
        dump_results(run, path)
        files.append(str(path))
    assert CliRunner().invoke(app, ["history", "ingest", *files, "--db", db]).exit_code == 0
    trend = CliRunner().invoke(app, ["trend", "--db", db, "--html", str(blocker / "t.html")])
    assert trend.exit_code == 2 and f"{blocker / 't.html'}: a file is in the way of the folder" in trend.stderr


def test_a_corrupt_store_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_text("this is not SQLite")
    res = CliRunner().invoke(app, ["history", "noise", "--db", f"sqlite:///{bad}"])
    assert res.exit_code == 2 and "is not a usable history store: file is not a database" in res.stderr


def test_file_errors_map_to_usage_or_infrastructure() -> None:
    assert isinstance(file_error(OSError(errno.ENOTDIR, "Not a directory", "/x/y")), UsageError)
    full = file_error(OSError(errno.ENOSPC, "No space left on device", "/x/y"))
    assert isinstance(full, InfrastructureError) and full.message == "/x/y: No space left on device."


def test_a_store_url_without_its_driver_is_a_clear_error() -> None:
    res = CliRunner().invoke(app, ["trend", "--db", "mysql://someone@somewhere/db"])
    assert res.exit_code == 2 and "the database driver is not installed" in res.stderr
    assert "postgresql+psycopg://" in res.stderr and "Traceback" not in res.output


def test_history_noise_refuses_a_tolerance_metric(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app, ["history", "noise", "--db", f"sqlite:///{tmp_path / 'h.db'}", "--metric", "memory.peak_rss"]
    )
    assert res.exit_code == 2 and "tolerance rule" in res.stderr
    assert not (tmp_path / "h.db").exists()  # refused before opening (creating) the store


def test_ab_with_nothing_to_compare_names_the_before_a_commit_form(tmp_path: Path) -> None:
    """`perfci ab` alone, the first thing tried before a commit: the hint says what `perfci ab HEAD` compares."""
    res = CliRunner().invoke(app, ["ab"])
    said = " ".join(res.stderr.split())
    assert res.exit_code == 2 and "perfci ab needs a base revision" in said, said
    assert "`perfci ab HEAD`: your uncommitted changes against the last commit" in said
