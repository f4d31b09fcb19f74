"""The work folder `.perfci/` is made with a `.gitignore` that ignores it, so runs and the history store never show
in `git status` (perfci/work_folder.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.api.ab import default_ab_out
from perfci.api.run import default_run_out
from perfci.cli import app
from perfci.format.schema import dump_results
from perfci.work_folder import IGNORE_TEXT, mark_new_output_folder, mark_work_folder
from tests.conftest import make_case, make_run


def test_a_path_in_the_work_folder_gets_the_folder_and_its_gitignore(tmp_path: Path) -> None:
    mark_work_folder(tmp_path / "p" / ".perfci" / "runs" / "20261206T000000Z")
    assert (tmp_path / "p" / ".perfci" / ".gitignore").read_text() == IGNORE_TEXT
    assert not (tmp_path / "p" / ".perfci" / "runs").exists()  # the outputs' own folders are their writers'


def test_an_existing_gitignore_is_kept_and_other_paths_left_alone(tmp_path: Path) -> None:
    (tmp_path / ".perfci").mkdir()
    (tmp_path / ".perfci" / ".gitignore").write_text("mine\n")
    mark_work_folder(tmp_path / ".perfci" / "history.db")
    assert (tmp_path / ".perfci" / ".gitignore").read_text() == "mine\n"
    mark_work_folder(tmp_path / "out" / "results.json")
    assert not (tmp_path / "out").exists()


def test_a_work_folder_that_cannot_be_made_is_left_to_the_writers(tmp_path: Path) -> None:
    (tmp_path / ".perfci").write_text("a file where the folder would be\n")
    mark_work_folder(tmp_path / ".perfci" / "runs" / "x")  # no exception: writing the outputs will say why
    assert (tmp_path / ".perfci").read_text() == "a file where the folder would be\n"


def test_default_outputs_and_the_default_store_leave_git_status_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PERFCI_DB", raising=False)
    results = tmp_path.parent / f"{tmp_path.name}-results.json"  # outside the repository
    dump_results(make_run([make_case("a", 1e-3)]), results)
    assert CliRunner().invoke(app, ["history", "ingest", str(results)]).exit_code == 0
    assert (tmp_path / ".perfci" / "history.db").is_file()
    assert default_run_out().parts[0] == ".perfci" and (tmp_path / default_run_out()).is_dir()  # made by `run`
    ab_out = default_ab_out()  # named: `ab` makes it once it measures, under its lock
    assert ab_out.parts[0] == ".perfci" and not ab_out.exists()
    (tmp_path / ab_out).mkdir(parents=True)
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], capture_output=True, text=True,
                            check=True)  # fmt: skip
    assert status.stdout == "", status.stdout


def test_a_run_with_no_out_leaves_only_the_workload_in_git_status(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "w.py").write_text("import perfci\n\n\n@perfci.workload()\ndef add(ctx):\n    return lambda: 1 + 1\n")
    run = subprocess.run([sys.executable, "-m", "perfci", "run", "w.py", "--rounds", "2", "--round-time", "0.02"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert len(list((tmp_path / ".perfci" / "runs").glob("*/results.json"))) == 1
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=tmp_path,
                            capture_output=True, text=True, check=True)  # fmt: skip
    assert status.stdout.splitlines() == ["?? w.py"], status.stdout


def test_a_refused_ab_makes_no_work_folder(tmp_path: Path) -> None:
    """Nothing to measure is refused (exit 2) before anything is written: no `.perfci/` is left behind."""
    git = ["git", "-C", str(tmp_path), "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "README").write_text("x\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    proc = subprocess.run([sys.executable, "-m", "perfci", "ab", "HEAD"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 2 and "nothing to measure" in proc.stderr, proc.stderr
    assert not (tmp_path / ".perfci").exists()


def test_a_new_default_output_folder_is_ignored_and_an_existing_one_left_as_it_is(tmp_path: Path) -> None:
    """`perfci ci`'s perfci-out/: made with the work folder's .gitignore when perfci makes it; a folder already
    there (perhaps the user's, tracked) gets no .gitignore."""
    mark_new_output_folder(tmp_path / "perfci-out")
    assert (tmp_path / "perfci-out" / ".gitignore").read_text() == IGNORE_TEXT
    (tmp_path / "theirs").mkdir()
    mark_new_output_folder(tmp_path / "theirs")
    assert not (tmp_path / "theirs" / ".gitignore").exists()
    (tmp_path / "file").write_text("x")
    mark_new_output_folder(tmp_path / "file" / "out")  # cannot be made: left for the writer's own error
    assert (tmp_path / "file").read_text() == "x"
