"""The history store's answers that a user audit found wrong: a shard's results file ingested as a whole run, a
rolling baseline that held the candidate's own run or spanned a change point without a word, and prune's
messages (how many runs are kept, a runner without runs, a dry run)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.api.compare import CompareOutcome, CompareRequest, compare_files
from perfci.api.history import prune
from perfci.api.merge import merge_runs
from perfci.api.settings import Settings
from perfci.cli import app
from perfci.errors import ResultsFormatError, UsageError
from perfci.format.model import RunResult
from perfci.format.schema import dump_results
from perfci.store.history import HistoryStore
from tests.conftest import make_case, make_run
from tests.store_cases import history_runs

RUNNER = "cpu-test"
ALPHA, BETA = "t.alpha[n=8]@cpu", "t.beta[n=8]@cpu"

# --- a shard is part of a run -------------------------------------------------------------------------------------


def _shards() -> list[RunResult]:
    """The two shards of one run: alpha measured by shard 1/2, beta by shard 2/2."""
    whole = make_run([make_case("alpha", 1e-3), make_case("beta", 2e-3)])
    return [
        replace(
            whole, run_id=f"shard-{i}", cases=(case,), settings={**whole.settings, "complete": True, "shard": f"{i}/2"}
        )
        for i, case in enumerate(whole.cases, start=1)
    ]


def test_a_shards_results_file_is_refused_and_its_merge_ingested(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    shards = _shards()
    paths = []
    for i, run in enumerate(shards, start=1):
        paths.append(tmp_path / f"s{i}" / "results.json")
        paths[-1].parent.mkdir()
        dump_results(run, paths[-1])
    merged = tmp_path / "merged.json"
    dump_results(merge_runs(list(zip(paths, shards, strict=True))), merged)
    runner = CliRunner()
    for i, path in enumerate(paths, start=1):
        res = runner.invoke(app, ["history", "ingest", str(path), "--db", db, "--runner", RUNNER])
        assert res.exit_code == 2, res.output
        error, hint = res.stderr.strip().splitlines()
        assert error == (
            f"error: run shard-{i} is shard {i}/2 of a run, not a whole run; the history keeps whole runs only."
        )
        assert hint.startswith("hint: join the shards with 'perfci merge") and "ingest DIR/results.json" in hint
    # with the merged file in the same call: nothing is stored (one transaction)
    res = runner.invoke(app, ["history", "ingest", str(merged), str(paths[0]), "--db", db, "--runner", RUNNER])
    assert res.exit_code == 2
    assert HistoryStore(db).list_runs() == []
    res = runner.invoke(app, ["history", "ingest", str(merged), "--db", db, "--runner", RUNNER])
    assert res.exit_code == 0 and "ingested 1 run(s)" in res.stderr, res.output
    (stored,) = HistoryStore(db).list_runs()
    assert stored.measurements == sum(len(c.metrics) for s in shards for c in s.cases)  # each case once


def test_the_store_refuses_a_shard_with_the_hint(tmp_path: Path) -> None:
    store = HistoryStore(f"sqlite:///{tmp_path / 'h.db'}")
    with pytest.raises(ResultsFormatError) as raised:
        store.ingest(_shards()[0], RUNNER)
    assert raised.value.hint is not None and "perfci merge" in raised.value.hint
    assert store.list_runs() == []


# --- the rolling baseline ---------------------------------------------------------------------------------------


def _compare(url: str, run: RunResult, path: Path, spec: str) -> CompareOutcome:
    dump_results(run, path)
    return compare_files(Settings(), CompareRequest(baseline=path, runner=RUNNER, db=url, store_baseline=spec))


def _rows(outcome: CompareOutcome) -> dict[str, tuple[int | None, str | None]]:
    """case -> (runs in its baseline, note) of the latency rows."""
    return {r.case_id: (r.n_baseline, r.note) for r in outcome.comparison.rows if r.metric == "latency.median"}


def test_the_window_leaves_out_the_candidates_own_run(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.db'}"
    runs = history_runs(12, step_at=99)
    HistoryStore(url).ingest_many((r, RUNNER) for r in runs)
    outcome = _compare(url, runs[-1], tmp_path / "r11.json", "store:main:5")  # the candidate is run-11, stored
    assert outcome.baseline.settings["rolling_baseline"]["runs"] == [f"run-{i:02d}" for i in range(6, 11)]
    assert "last 5 run(s) of cpu-test (c006..c010)" in outcome.comparison.baseline_label
    assert {n for n, _ in _rows(outcome).values()} == {5}
    # a candidate not in the store: the latest 5
    outcome = _compare(url, replace(runs[-1], run_id="new"), tmp_path / "new.json", "store:main:5")
    assert outcome.baseline.settings["rolling_baseline"]["runs"] == [f"run-{i:02d}" for i in range(7, 12)]
    # two runs stored, one of them the candidate's: one run is no rolling baseline
    small = f"sqlite:///{tmp_path / 'small.db'}"
    HistoryStore(small).ingest_many((r, RUNNER) for r in runs[:2])
    with pytest.raises(UsageError, match=r"has 1 run\(s\) of runner class 'cpu-test' on branch 'main' besides"):
        _compare(small, runs[1], tmp_path / "r01.json", "store:main")


def test_a_change_point_inside_the_window_is_named_and_the_runs_before_it_left_out(tmp_path: Path) -> None:
    """alpha got 25% slower at run-10 of 16; a candidate at the new level is compared with the 6 runs since it
    (the whole window of 10 made it a slowdown of about 10%), and its row says so; beta has no change point."""
    url = f"sqlite:///{tmp_path / 'h.db'}"
    HistoryStore(url).ingest_many((r, RUNNER) for r in history_runs(16, step_at=10, factor=1.25))
    cand = make_run([make_case("alpha", 1e-3, seed=500, scale=1.25), make_case("beta", 2e-3, seed=500)], "cand")
    outcome = _compare(url, cand, tmp_path / "cand.json", "store:main:10")
    rows = _rows(outcome)
    assert rows[ALPHA] == (
        6,
        "rolling baseline: 6 run(s) since the change point at run run-10 (commit c010, +25.0%); "
        "the 4 run(s) before it left out",
    )
    assert rows[BETA] == (10, "rolling baseline: 10 run(s)")
    (alpha,) = [r for r in outcome.comparison.rows if r.case_id == ALPHA and r.metric == "latency.median"]
    assert alpha.ratio == pytest.approx(1.0, abs=0.03)  # against the new level, not a mix of both


def test_a_change_point_with_few_runs_since_it_is_named_in_the_note(tmp_path: Path) -> None:
    """run-12 is the candidate, stored: the window is run-02..run-11, and only run-10 and run-11 are past alpha's
    change point: too few to compare with alone, so the row keeps the window and says that it spans the change."""
    url = f"sqlite:///{tmp_path / 'h.db'}"
    runs = history_runs(13, step_at=10, factor=1.25)
    HistoryStore(url).ingest_many((r, RUNNER) for r in runs)
    rows = _rows(_compare(url, runs[-1], tmp_path / "r12.json", "store:main:10"))
    n, note = rows[ALPHA]
    assert n == 10 and note is not None
    assert note.startswith("rolling baseline: 10 run(s) across the change point at run run-10 (commit c010, +2")
    assert note.endswith("): fewer than 3 runs since it")
    assert rows[BETA] == (10, "rolling baseline: 10 run(s)")


# --- prune's messages -------------------------------------------------------------------------------------------


def test_prune_says_what_it_kept_and_would_keep(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    HistoryStore(db).ingest_many((r, RUNNER) for r in history_runs(1))
    settings = Settings()
    assert prune(settings, db, 500).lines() == ["cpu-test: deleted 0 run(s), kept 1"]
    assert prune(settings, db, 500, dry_run=True).lines() == ["cpu-test: would delete 0 run(s), would keep 1"]
    assert prune(settings, db, 8, runner="nope").lines() == ["the history store has no runs of runner nope"]
    assert HistoryStore(db).prune(8, "nope") == {}  # a runner without runs: nothing to say it kept
    res = CliRunner().invoke(app, ["history", "prune", "--keep", "8", "--runner", "nope", "--db", db])
    assert res.exit_code == 0 and res.stderr.strip() == "the history store has no runs of runner nope"

    HistoryStore(db).ingest_many((r, "cpu-other") for r in history_runs(16))
    assert prune(settings, db, 10, dry_run=True).lines() == [
        "cpu-other: would delete 6 run(s), would keep the latest 10",
        "cpu-test: would delete 0 run(s), would keep 1",
    ]
    assert len(HistoryStore(db).list_runs()) == 17  # a dry run deletes nothing
    assert prune(settings, db, 10).lines() == [
        "cpu-other: deleted 6 run(s), kept the latest 10",
        "cpu-test: deleted 0 run(s), kept 1",
    ]
    assert len(HistoryStore(db).list_runs()) == 11
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    HistoryStore(empty)  # made, with no runs
    assert prune(settings, empty, 3).lines() == ["the history store has no runs"]
    # a mistyped path is refused, not made (a user audit: it made the file and said "no runs", exit 0)
    typo = tmp_path / "typo.db"
    res = CliRunner().invoke(app, ["history", "prune", "--keep", "3", "--db", f"sqlite:///{typo}"])
    assert res.exit_code == 2 and "no history store at" in res.stderr and not typo.exists(), res.output
    base = tmp_path / "r.json"
    dump_results(make_run([make_case("a", 1e-3)]), base)
    res = CliRunner().invoke(app, ["compare", str(base), str(base), "--history-noise", "--db", f"sqlite:///{typo}"])
    assert res.exit_code == 2 and "no history store at" in res.stderr and not typo.exists(), res.output


def test_a_postgres_scheme_url_is_refused_with_its_spelling_and_the_password_masked() -> None:
    """`--db postgres://...` (libpq's and Heroku's spelling) said "not a database URL" with a SQLite example, and
    quoted the password (a user audit)."""
    res = CliRunner().invoke(app, ["history", "list", "--db", "postgres://u:secret@h/db"])
    assert res.exit_code == 2, res.output
    assert "'postgres://u:***@h/db' is not a database URL" in res.stderr and "secret" not in res.stderr
    assert "postgresql+psycopg://" in res.stderr
