"""History store on a real SQLite file, and the history/trend CLI."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from typer.testing import CliRunner

from perfci.cli import app
from perfci.format.schema import dump_results
from perfci.store.history import HistoryStore
from tests.store_cases import (
    check_change_point_cache,
    check_export,
    check_ingest_exact,
    check_rolling_baseline,
    check_store,
    history_runs,
)


def test_sqlite_store(tmp_path: Path) -> None:
    check_store(HistoryStore(f"sqlite:///{tmp_path / 'h.db'}"))
    # reopening the same file sees the same data (check_store ends by pruning to the latest 5 runs)
    again = HistoryStore(f"sqlite:///{tmp_path / 'h.db'}")
    assert len(again.series("cpu-test", "t.beta[n=8]@cpu", "latency.median")) == 5


def test_sqlite_export(tmp_path: Path) -> None:
    check_export(f"sqlite:///{tmp_path / 'h.db'}", tmp_path)


def test_sqlite_rolling_baseline(tmp_path: Path) -> None:
    check_rolling_baseline(f"sqlite:///{tmp_path / 'h.db'}", tmp_path)


def test_history_cli_ingest_and_trend(tmp_path: Path) -> None:
    files = []
    for run in history_runs():
        path = tmp_path / f"{run.run_id}.json"
        dump_results(run, path)
        files.append(str(path))
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    runner = CliRunner()
    res = runner.invoke(app, ["history", "ingest", *files, "--db", db, "--runner", "cpu-test"])
    assert res.exit_code == 0, res.output
    assert "ingested 16 run(s), skipped 0" in res.stderr
    res = runner.invoke(app, ["trend", "--db", db, "--format", "json", "-k", "alpha"])
    assert res.exit_code == 0, res.output
    (item,) = json.loads(res.stdout)
    assert item["case_id"] == "t.alpha[n=8]@cpu"
    assert [c["commit"] for c in item["change_points"]] == ["c010"]


def test_trend_on_empty_store_is_a_clear_error(tmp_path: Path) -> None:
    HistoryStore(f"sqlite:///{tmp_path / 'empty.db'}")
    res = CliRunner().invoke(app, ["trend", "--db", f"sqlite:///{tmp_path / 'empty.db'}"])
    assert res.exit_code == 2
    assert "no values" in res.stderr


def test_commands_that_only_read_refuse_a_missing_store_and_make_nothing(tmp_path: Path) -> None:
    """Fuzzing: a mistyped path listed nothing, exit 0, and left folders and an empty store behind."""
    db = f"sqlite:///{tmp_path / 'typo' / 'h.db'}"
    for args in (["history", "list"], ["history", "export", "--out", str(tmp_path / "x.csv")], ["trend"]):
        res = CliRunner().invoke(app, [*args, "--db", db])
        assert res.exit_code == 2 and "no history store at" in res.stderr, (args, res.stderr)
    assert not (tmp_path / "typo").exists()


def test_a_store_path_that_is_a_folder_or_a_device_is_bad_input(tmp_path: Path) -> None:
    """A folder or /dev/null as --db was exit 3 (infrastructure: "unable to open database file", "disk I/O error"),
    as if the machine had failed, for a mistyped path."""
    (tmp_path / "folder").mkdir()
    dump_results(history_runs(1)[0], tmp_path / "run.json")
    for path, words in ((tmp_path / "folder", "a folder"), (Path("/dev/null"), "not a regular file")):
        for args in (["history", "list"], ["trend"], ["history", "ingest", str(tmp_path / "run.json")]):
            res = CliRunner().invoke(app, [*args, "--db", f"sqlite:///{path}"])
            assert res.exit_code == 2, (path, args, res.stderr)
            assert f"{path}: {words}, not a SQLite history store" in res.stderr, (path, args, res.stderr)


def test_ingest_rejects_a_corrupt_file_without_writing(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    dump_results(history_runs(1)[0], good)
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "perfci.results", "schema_version": 1')
    db = tmp_path / "h.db"
    res = CliRunner().invoke(app, ["history", "ingest", str(good), str(bad), "--db", f"sqlite:///{db}"])
    assert res.exit_code == 2
    assert "bad.json" in res.stderr
    assert not db.exists()  # nothing written: every file is validated first


def test_ingest_warns_of_runs_that_record_no_commit(tmp_path: Path) -> None:
    """A run measured outside a git checkout records no commit; the history then shows it by date only. Before,
    `history ingest` stored it without a word."""
    with_commit, without = history_runs(2)
    paths = tmp_path / "a.json", tmp_path / "b.json"
    dump_results(with_commit, paths[0])
    dump_results(replace(without, git=None), paths[1])
    db = f"sqlite:///{tmp_path / 'h.db'}"
    res = CliRunner().invoke(app, ["history", "ingest", str(paths[0]), "--db", db])
    assert res.exit_code == 0 and "no commit" not in res.stderr, res.stderr
    res = CliRunner().invoke(app, ["history", "ingest", str(paths[1]), "--db", db])
    assert res.exit_code == 0, res.stderr
    assert f"warning: 1 of the runs read record no commit ({without.run_id}): measured outside" in res.stderr


def test_ingest_refuses_an_interrupted_run(tmp_path: Path) -> None:
    whole, cut = history_runs(2)
    good, partial = tmp_path / "whole.json", tmp_path / "partial.json"
    dump_results(whole, good)
    dump_results(replace(cut, settings={**cut.settings, "complete": False}), partial)  # as Runner writes mid-run
    db = tmp_path / "h.db"
    res = CliRunner().invoke(app, ["history", "ingest", str(good), str(partial), "--db", f"sqlite:///{db}"])
    assert res.exit_code == 2
    assert res.stderr.startswith(f"error: {partial}: the run did not complete")
    assert not db.exists()


def test_trend_check_fails_on_a_recent_slowdown_only(tmp_path: Path) -> None:
    """history_runs: 'alpha' 25% slower from run 10 of 16, i.e. within the latest 6 runs, not the latest 5."""
    db = f"sqlite:///{tmp_path / 'h.db'}"
    HistoryStore(db).ingest_many((r, "cpu-test") for r in history_runs())
    recent = CliRunner().invoke(app, ["trend", "--db", db, "--check", "6"])
    assert recent.exit_code == 1, recent.output
    assert "t.alpha[n=8]@cpu: latency.median +2" in recent.stderr and "commit c010" in recent.stderr
    assert "FAIL: 1 case(s) got worse within their latest 6 runs" in recent.stderr
    older = CliRunner().invoke(app, ["trend", "--db", db, "--check", "5"])
    assert older.exit_code == 0 and "PASS: 0 case(s)" in older.stderr
    # throughput fell at the same run: worse for a higher-is-better metric
    tput = CliRunner().invoke(app, ["trend", "--db", db, "--check", "6", "--metric", "throughput"])
    assert tput.exit_code == 1, tput.output
    status = CliRunner().invoke(app, ["trend", "--db", db, "--format", "json"])
    assert {t["case_id"]: t["status"] for t in json.loads(status.stdout)} == {
        "t.alpha[n=8]@cpu": "worse",
        "t.beta[n=8]@cpu": "steady",
    }


def test_trend_check_refuses_a_window_that_could_never_fail(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["trend", "--db", f"sqlite:///{tmp_path / 'h.db'}", "--check", "2"])
    assert res.exit_code == 2


def test_history_prune_cli(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    HistoryStore(db).ingest_many((r, "cpu-test") for r in history_runs())
    dry = CliRunner().invoke(app, ["history", "prune", "--keep", "10", "--db", db, "--dry-run"])
    assert dry.exit_code == 0 and "cpu-test: would delete 6 run(s), would keep the latest 10" in dry.stderr
    res = CliRunner().invoke(app, ["history", "prune", "--keep", "10", "--db", db])
    assert res.exit_code == 0 and "cpu-test: deleted 6 run(s)" in res.stderr
    assert len(HistoryStore(db).series("cpu-test", "t.beta[n=8]@cpu", "latency.median")) == 10
    assert CliRunner().invoke(app, ["history", "prune", "--keep", "0", "--db", db]).exit_code == 2


def test_history_list_export_and_rolling_compare_cli(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    runs = history_runs(12, step_at=99)
    HistoryStore(db).ingest_many((r, "cpu-test") for r in runs)
    runner = CliRunner()
    res = runner.invoke(app, ["history", "list", "--db", db, "--since", "2026-11-11", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert [r["run_id"] for r in json.loads(res.stdout)] == ["run-11", "run-10"]
    res = runner.invoke(app, ["history", "list", "--db", db, "--branch", "main", "--limit", "3"])
    assert res.exit_code == 0 and "run-11" in res.stdout and "run-08" not in res.stdout
    dump_results(runs[0], tmp_path / "r0.json")
    for memory in ("sqlite://", "sqlite:///:memory:"):  # fuzzing: "ingested 1 run(s)", and nothing was kept
        res = runner.invoke(app, ["history", "ingest", str(tmp_path / "r0.json"), "--db", memory])
        assert res.exit_code == 2 and "is an in-memory database: it keeps nothing" in res.stderr
    for flag, bad in (("--since", "garbage"), ("--until", "2026-13-01"), ("--since", "20261101")):
        # fuzzing: `--since garbage` listed nothing and `--until garbage` exported everything, without a word
        res = runner.invoke(app, ["history", "list", "--db", db, flag, bad])
        assert res.exit_code == 2 and f"{flag} '{bad}' is not an ISO date or time" in res.stderr
        res = runner.invoke(app, ["history", "export", "--db", db, flag, bad, "--out", str(tmp_path / "x.csv")])
        assert res.exit_code == 2 and not (tmp_path / "x.csv").exists()
    out = tmp_path / "m.csv"
    res = runner.invoke(app, ["history", "export", "--db", db, "--format", "csv", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert f"exported {12 * sum(len(c.metrics) for c in runs[0].cases)} row(s)" in res.stderr
    cand = tmp_path / "cand.json"
    dump_results(replace(history_runs(1, factor=1.0)[0], run_id="cand"), cand)
    res = runner.invoke(app, ["compare", str(cand), "--baseline", "store:main", "--db", db, "--runner", "cpu-test"])
    assert res.exit_code == 0, res.output
    assert "main: last 10 run(s) of cpu-test" in res.stdout + res.stderr
    res = runner.invoke(app, ["compare", str(cand), "--baseline", "store:", "--db", db])
    assert res.exit_code == 2 and "names no branch" in res.stderr
    res = runner.invoke(app, ["compare", str(cand), "--baseline", "store:main:99999999999999999999", "--db", db])
    assert res.exit_code == 2 and "the number of runs must be from 2 to 100,000" in res.stderr  # was a traceback
    res = runner.invoke(app, ["compare", str(cand), "--baseline", "store:dev", "--db", db, "--runner", "cpu-test"])
    assert res.exit_code == 2 and "0 run(s) of runner class 'cpu-test' on branch 'dev'" in res.stderr


def test_sqlite_ingest_exact(tmp_path: Path) -> None:
    check_ingest_exact(f"sqlite:///{tmp_path / 'h.db'}", tmp_path)


def test_sqlite_change_point_cache(tmp_path: Path) -> None:
    refuse = "CREATE TRIGGER cache_refused BEFORE INSERT ON change_points BEGIN SELECT RAISE(ABORT, 'read-only'); END"
    check_change_point_cache(f"sqlite:///{tmp_path / 'h.db'}", refuse_writes=refuse)
