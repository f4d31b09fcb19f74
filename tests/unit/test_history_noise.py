"""Cross-job noise learned from the history store (compare/history_noise.py), on a real SQLite file, and its CLI."""

from __future__ import annotations

import json
import math
import random
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from perfci.cli import app
from perfci.compare.history_noise import HistoryNoise, estimate_noise
from perfci.compare.policy import CPU_JOB_NOISE, DecisionSettings, job_noise
from perfci.format.model import RunResult
from perfci.format.schema import dump_results
from perfci.store import migrate
from perfci.store.history import HistoryStore
from perfci.store.tables import STORE_VERSION
from tests.conftest import make_case, make_run
from tests.store_cases import check_upgrade_from_v1

CASE = "t.alpha[n=8]@cpu"


def history(n: int, job_sd: float, seed: int = 1) -> list[RunResult]:
    """n runs of one case whose every round is shifted by a per-run factor exp(N(0, job_sd))."""
    rng = random.Random(seed)
    runs = []
    for i in range(n):
        scale = math.exp(rng.gauss(0.0, job_sd))
        run = make_run([make_case("alpha", 1e-3, seed=100 + i, scale=scale)], run_id=f"h-{i:02d}")
        stamp = f"2026-10-{1 + i:02d}T00:00:00.000000Z"
        runs.append(replace(run, started_at=stamp, finished_at=stamp))
    return runs


def store_with(tmp_path: Path, runs: list[RunResult]) -> str:
    url = f"sqlite:///{tmp_path / 'h.db'}"
    HistoryStore(url).ingest_many((r, "cpu-test") for r in runs)
    return url


def test_policy_uses_the_lookup_then_the_default() -> None:
    table = {(CASE, "latency.median"): 0.02}
    settings = DecisionSettings(job_noise_lookup=lambda c, m: table.get((c, m)))
    assert job_noise(settings, CASE) == 0.02
    assert job_noise(settings, "t.other[n=8]@cpu") == CPU_JOB_NOISE  # no history: the default
    assert job_noise(replace(settings, job_noise=0.05), CASE) == 0.05  # an explicit figure wins
    assert settings.as_dict()["job_noise_from"] == "history"


def test_noise_table_and_json_recover_a_known_job_term(tmp_path: Path) -> None:
    url = store_with(tmp_path, history(30, job_sd=0.05))
    res = CliRunner().invoke(app, ["history", "noise", "--db", url, "--format", "json"])
    assert res.exit_code == 0, res.output
    (item,) = json.loads(res.stdout)
    assert item["used"] == 30 and item["case_id"] == CASE
    assert 0.035 <= item["job_sd"] <= 0.068  # 30 runs: the estimate's sd is about 13% of the truth
    assert item["job_upper"] > item["job_sd"]
    table = CliRunner().invoke(app, ["history", "noise", "--db", url], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "upper 90%" in table.stdout and "30 / 30" in table.stdout
    few = CliRunner().invoke(app, ["history", "noise", "--db", url, "--min-runs", "40"], env={"COLUMNS": "200"})
    assert few.exit_code == 0 and "default 10% (< 40 runs)" in few.stdout


def test_compare_with_history_noise_resolves_what_the_default_cannot(tmp_path: Path) -> None:
    """A steady runner's history (job term 0.5%) lets an unpaired comparison call an 8% slowdown a regression;
    with the default 10% cross-job noise the same files are inconclusive."""
    url = store_with(tmp_path, history(12, job_sd=0.005))
    base = make_run([make_case("alpha", 1e-3, seed=900)], run_id="base")
    head = make_run([make_case("alpha", 1e-3, seed=901, scale=1.08)], run_id="head")
    dump_results(base, tmp_path / "base.json")
    dump_results(head, tmp_path / "head.json")
    files = [str(tmp_path / "base.json"), str(tmp_path / "head.json"), "--format", "json", "--runner", "cpu-test"]
    default = CliRunner().invoke(app, ["compare", *files])
    learned = CliRunner().invoke(app, ["compare", *files, "--history-noise", "--db", url])
    assert default.exit_code == 0, default.output
    assert learned.exit_code == 1, learned.output
    verdicts = {
        name: {r["metric"]: r["verdict"] for r in json.loads(res.stdout)["rows"]}["latency.median"]
        for name, res in (("default", default), ("learned", learned))
    }
    assert verdicts == {"default": "inconclusive", "learned": "regression"}
    doc = json.loads(learned.stdout)
    assert doc["settings"]["job_noise_from"] == "history"
    assert any("history store (runner cpu-test): 1 of 1" in w for w in doc["warnings"])


def test_the_candidates_own_stored_run_is_left_out_of_its_noise(tmp_path: Path) -> None:
    """A candidate ingested before it is compared (a CI job that stores, then gates): its own +30% step widened the
    noise that judged it."""
    head = make_run([make_case("alpha", 1e-3, seed=901, scale=1.3)], run_id="head")
    head = replace(head, started_at="2026-10-30T00:00:00.000000Z", finished_at="2026-10-30T00:00:00.000000Z")
    url = store_with(tmp_path, [*history(12, job_sd=0.005), head])
    store = HistoryStore(url)
    with_it = estimate_noise(store, "cpu-test")[CASE]
    without = estimate_noise(store, "cpu-test", exclude_run="head")[CASE]
    assert (with_it.used, without.used) == (13, 12)
    assert with_it.noise is not None and without.noise is not None and without.noise < with_it.noise / 3
    lookup = HistoryNoise(store, "cpu-test", exclude_run="head")
    assert lookup(CASE, "latency.median") == without.noise


def test_history_noise_and_job_noise_exclude_each_other(tmp_path: Path) -> None:
    base = make_run([make_case("alpha", 1e-3)], run_id="b")
    dump_results(base, tmp_path / "b.json")
    args = ["compare", str(tmp_path / "b.json"), str(tmp_path / "b.json"), "--history-noise", "--job-noise", "0.1"]
    res = CliRunner().invoke(app, [*args, "--db", f"sqlite:///{tmp_path / 'h.db'}"])
    assert res.exit_code == 2 and "not both" in res.stderr


def test_short_history_keeps_the_default_and_says_so(tmp_path: Path) -> None:
    url = store_with(tmp_path, history(5, job_sd=0.005))
    lookup = HistoryNoise(HistoryStore(url), "cpu-test")
    assert lookup(CASE, "latency.median") is None
    summary = lookup.summary()
    assert summary is not None and "0 of 1" in summary and "keep the default" in summary


def test_a_version_1_store_is_upgraded_in_place(tmp_path: Path) -> None:
    check_upgrade_from_v1(f"sqlite:///{tmp_path / 'v1.db'}")


def test_newer_store_is_refused(tmp_path: Path) -> None:
    url = store_with(tmp_path, history(1, 0.0))
    with sqlite3.connect(tmp_path / "h.db") as conn:
        conn.execute("UPDATE store_meta SET value=? WHERE key='store_version'", (str(STORE_VERSION + 1),))
    res = CliRunner().invoke(app, ["history", "noise", "--db", url])
    assert res.exit_code == 2 and f"version {STORE_VERSION + 1}" in res.stderr


@pytest.mark.parametrize("metric", ["latency.vs_reference"])
def test_metric_without_history_is_a_clear_error(tmp_path: Path, metric: str) -> None:
    url = store_with(tmp_path, history(3, 0.0))
    res = CliRunner().invoke(app, ["history", "noise", "--db", url, "--metric", metric])
    assert res.exit_code == 2 and "no values" in res.stderr


def test_a_half_upgraded_store_is_a_clear_error(tmp_path: Path) -> None:
    """A version-1 store that already has one of the new columns (someone's interrupted upgrade): one error that
    says what failed, nothing half-applied."""
    url = f"sqlite:///{tmp_path / 'v1.db'}"
    check_upgrade_from_v1(url)  # now version 3
    with sqlite3.connect(tmp_path / "v1.db") as conn:
        conn.execute("UPDATE store_meta SET value='1' WHERE key='store_version'")
    res = CliRunner().invoke(app, ["trend", "--db", url])
    assert res.exit_code == 3 and "could not upgrade the history store to version 2" in res.stderr


def test_losing_an_upgrade_race_is_fine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another job upgraded the store between our version check and our ALTER: our ALTER fails, the store is at
    version 2, and we go on."""
    url = f"sqlite:///{tmp_path / 'v1.db'}"
    check_upgrade_from_v1(url)
    with sqlite3.connect(tmp_path / "v1.db") as conn:
        conn.execute("UPDATE store_meta SET value='1' WHERE key='store_version'")
    calls = {"n": 0}
    real = migrate._version

    def racing(engine: Engine, label: str) -> int | None:
        calls["n"] += 1
        if calls["n"] == 2:  # the re-check after the failed ALTER: the other job has finished
            with sqlite3.connect(tmp_path / "v1.db") as conn:
                conn.execute("UPDATE store_meta SET value='2' WHERE key='store_version'")
        return real(engine, label)

    monkeypatch.setattr(migrate, "_version", racing)
    store = HistoryStore(url)
    assert calls["n"] == 2 and store.series("cpu-test", CASE, "latency.median")


def test_configuration_turns_history_noise_on_and_the_flag_off(tmp_path: Path) -> None:
    url = store_with(tmp_path, history(12, job_sd=0.005))
    base = make_run([make_case("alpha", 1e-3, seed=900)], run_id="base")
    head = make_run([make_case("alpha", 1e-3, seed=901, scale=1.08)], run_id="head")
    dump_results(base, tmp_path / "base.json")
    dump_results(head, tmp_path / "head.json")
    (tmp_path / "perfci.toml").write_text("history_noise = true\n")
    files = [str(tmp_path / "base.json"), str(tmp_path / "head.json"), "--runner", "cpu-test", "--db", url]
    files += ["--config", str(tmp_path / "perfci.toml"), "--format", "json"]
    on = CliRunner().invoke(app, ["compare", *files])
    off = CliRunner().invoke(app, ["compare", *files, "--no-history-noise"])
    given = CliRunner().invoke(app, ["compare", *files, "--job-noise", "0.1"])  # an explicit figure wins
    assert (on.exit_code, off.exit_code, given.exit_code) == (1, 0, 0), on.output + off.output + given.output
    assert json.loads(given.stdout)["settings"]["job_noise_from"] == "given"
    (tmp_path / "bad.toml").write_text('history_noise = "yes"\n')
    bad = CliRunner().invoke(app, ["compare", *files[:-4], "--config", str(tmp_path / "bad.toml")])
    assert bad.exit_code == 2 and "history_noise" in bad.stderr


def test_compare_says_when_its_db_is_not_read(tmp_path: Path) -> None:
    """`--db` with history noise off reads nothing and stores nothing: said, with the command that stores a run;
    not said when --history-noise reads it."""
    url = store_with(tmp_path, history(12, job_sd=0.005))
    base = make_run([make_case("alpha", 1e-3, seed=900)], run_id="base")
    dump_results(base, tmp_path / "base.json")
    files = [str(tmp_path / "base.json"), str(tmp_path / "base.json"), "--runner", "cpu-test", "--db", url]
    unread = CliRunner().invoke(app, ["compare", *files])
    read = CliRunner().invoke(app, ["compare", *files, "--history-noise"])
    assert (unread.exit_code, read.exit_code) == (0, 0), unread.output + read.output
    said = " ".join(unread.stderr.split())
    assert "--db is read only for --history-noise, which is off" in said, said
    assert f"perfci history ingest {tmp_path / 'base.json'} --db URL" in said, said
    assert "--db is read only" not in read.stderr
