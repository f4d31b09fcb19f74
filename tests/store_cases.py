"""Shared checks for the history store, run against a real SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from perfci.api.compare import CompareRequest, compare_files
from perfci.api.history import ExportFormat, export_measurements
from perfci.api.settings import Settings
from perfci.compare.history_noise import estimate_noise
from perfci.format.model import CaseError, CaseResult, CaseStatus, RunResult
from perfci.format.schema import dump_results
from perfci.metrics.registry import default_registry, round_values
from perfci.store import tables
from perfci.store.history import HistoryStore, RunFilter
from perfci.store.trend import trends
from tests.conftest import make_case, make_run


def v1_tables() -> sa.MetaData:
    """The version-1 layout, as the first perfci release created it (SQLAlchemy Core, so each backend gets its own
    types and key generation): today's tables without the columns added in version 2."""
    md = sa.MetaData()
    tables.store_meta.to_metadata(md)
    tables.runs.to_metadata(md)
    sa.Table(
        "measurements",
        md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("case_id", sa.String(500), nullable=False, index=True),
        sa.Column("metric", sa.String(100), nullable=False),
        sa.Column("unit", sa.String(32), nullable=False),
        sa.Column("direction", sa.String(8), nullable=False),
        sa.Column("value", sa.Float, nullable=False),
        sa.Column("low", sa.Float),
        sa.Column("high", sa.Float),
    )
    return md


def history_runs(n: int = 16, step_at: int = 10, factor: float = 1.25) -> list[RunResult]:
    """n runs of two cases; 'alpha' gets `factor` slower from run `step_at` on, 'beta' stays put."""
    runs = []
    for i in range(n):
        scale = factor if i >= step_at else 1.0
        cases = [make_case("alpha", 1e-3, seed=i, scale=scale), make_case("beta", 2e-3, seed=i)]
        run = make_run(cases, run_id=f"run-{i:02d}")
        stamp = f"2026-11-{1 + i:02d}T00:00:00.000000Z"
        git = replace(run.git, commit=f"c{i:03d}") if run.git else None
        runs.append(replace(run, started_at=stamp, finished_at=stamp, git=git))
    return runs


def many_runs(n: int) -> list[RunResult]:
    """n runs of 3 ok cases and an error case (not stored), each with its own id, start, commit and runner
    fingerprint."""
    runs = []
    for i in range(n):
        cases = [make_case(name, base, seed=i) for name, base in (("alpha", 1e-3), ("beta", 2e-3), ("gamma", 5e-4))]
        failed = CaseResult.of(make_case("delta", 1e-3).spec, CaseStatus.ERROR, (), (), (CaseError("crash", "died"),))
        run = make_run([*cases, failed], run_id=f"many-{i:02d}")
        stamp = f"2026-11-{1 + i:02d}T00:00:00.000000Z"
        git = replace(run.git, commit=f"c{i:03d}", dirty=i % 2 == 1) if run.git else None
        fingerprint = {**run.fingerprint, "libraries": {"numpy": f"2.{i}.0"}}
        runs.append(replace(run, started_at=stamp, finished_at=stamp, git=git, fingerprint=fingerprint))
    return runs


Row = tuple[Any, ...]


def expected_rows(run: RunResult) -> list[Row]:
    """The measurements a run must be stored as, by the plain definition: each ok case's metrics in order
    (case_id, metric, unit, direction, value, low, high, rounds, log_mean, log_sd); for timed metrics the number
    of per-round values and the mean and sd of their logs (exactly summed), for the others None."""
    rows: list[Row] = []
    for case in run.cases:
        if case.status is not CaseStatus.OK:
            continue
        for m in case.metrics:
            definition = default_registry().get(m.name)
            timed = definition is not None and definition.timed and definition.comparable
            logs = [math.log(v) for v in round_values(case, definition).values()] if timed and definition else []
            stats: tuple[Any, ...] = (None, None, None)
            if len(logs) >= 2:
                mean = math.fsum(logs) / len(logs)
                stats = (len(logs), mean, math.sqrt(math.fsum((x - mean) ** 2 for x in logs) / (len(logs) - 1)))
            rows.append((case.id, m.name, m.unit, m.direction.value, m.value, m.low, m.high, *stats))
    return rows


def stored_rows(url: str) -> dict[tuple[str, str], tuple[Row, list[Row]]]:
    """(run id, runner) -> the run's row (commit, branch, dirty, started_at, finished_at, fingerprint) and its
    measurements in the order they were stored, for every stored run in the order the runs were stored."""
    engine = sa.create_engine(url)
    r, m = tables.runs.c, tables.measurements.c
    out: dict[tuple[str, str], tuple[Row, list[Row]]] = {}
    with engine.connect() as conn:
        for pk, run_id, runner, *header in conn.execute(
            sa.select(r.id, r.run_id, r.runner, r.commit, r.branch, r.dirty, r.started_at, r.finished_at,
                      r.fingerprint).order_by(r.id)
        ):  # fmt: skip
            rows = conn.execute(
                sa.select(m.case_id, m.metric, m.unit, m.direction, m.value, m.low, m.high, m.rounds, m.log_mean,
                          m.log_sd).where(m.run == pk).order_by(m.id)
            )  # fmt: skip
            out[(run_id, runner)] = (tuple(header), [tuple(row) for row in rows])
    engine.dispose()
    return out


def check_ingest_exact(url: str, folder: Path) -> None:
    """`perfci history ingest` of several files (loaded in worker processes, written in bulk) stores exactly the
    rows of `expected_rows`, every float as it was in the file; a second ingest skips them all."""
    from typer.testing import CliRunner

    from perfci.cli import app

    runs = many_runs(6)
    paths = []
    for run in runs:
        paths.append(str(folder / f"{run.run_id}.json"))
        dump_results(run, Path(paths[-1]))
    res = CliRunner().invoke(app, ["history", "ingest", *paths, "--db", url, "--runner", "cpu-test"])
    assert res.exit_code == 0, res.output
    assert "ingested 6 run(s), skipped 0" in res.stderr
    stored = stored_rows(url)
    assert list(stored) == [(r.run_id, "cpu-test") for r in runs]
    for run in runs:
        assert stored[(run.run_id, "cpu-test")][1] == expected_rows(run)
    assert HistoryStore(url).ingest_many((r, "cpu-test") for r in runs) == (0, 6)


def check_store(store: HistoryStore) -> None:
    runs = history_runs()
    added, skipped = store.ingest_many((r, "cpu-test") for r in runs)
    assert (added, skipped) == (16, 0)
    assert store.ingest_many((r, "cpu-test") for r in runs[:3]) == (0, 3)  # idempotent
    assert store.runners() == ["cpu-test"]
    assert store.cases("cpu-test", "latency.median") == ["t.alpha[n=8]@cpu", "t.beta[n=8]@cpu"]
    series = store.series("cpu-test", "t.alpha[n=8]@cpu", "latency.median")
    assert [p.run_id for p in series] == [f"run-{i:02d}" for i in range(16)]
    assert series[0].value == runs[0].cases[0].metric("latency.median").value  # type: ignore[union-attr]
    by_case = {t.case_id: t for t in trends(store)}
    alpha = by_case["t.alpha[n=8]@cpu"]
    assert [(s.run_id, s.commit) for s in alpha.shifts] == [("run-10", "c010")]
    assert 1.2 < alpha.shifts[0].ratio < 1.3
    assert by_case["t.beta[n=8]@cpu"].shifts == ()
    check_round_statistics(store, runs)
    check_prune(store)


def check_round_statistics(store: HistoryStore, runs: list[RunResult]) -> None:
    """Store version 2: timed metrics carry their rounds' log statistics, and the noise learned from them."""
    beta_id = "t.beta[n=8]@cpu"
    series = store.series("cpu-test", beta_id, "latency.median")
    case = runs[0].case(beta_id)
    assert case is not None
    logs = [math.log(v) for v in round_values(case, default_registry()["latency.median"]).values()]
    assert series[0].rounds == 5
    assert series[0].log_mean == pytest.approx(statistics.fmean(logs), rel=1e-12)
    assert series[0].log_sd == pytest.approx(statistics.stdev(logs), rel=1e-9)
    assert store.series("cpu-test", beta_id, "memory.peak_rss")[0].rounds is None  # not a timed metric
    noise = estimate_noise(store, "cpu-test")
    alpha = noise["t.alpha[n=8]@cpu"]
    assert (alpha.used, alpha.since, alpha.term) == (6, "run-10", None)  # 6 runs since its change: too few
    beta = noise[beta_id]
    assert beta.used == 16 and beta.term is not None
    # the synthetic rounds have no job term: the rounds explain the runs' scatter, the bound stays small
    assert beta.term.job_upper < 0.01 and beta.noise == beta.term.job_upper


def check_upgrade_from_v1(url: str) -> None:
    """A version-1 store opens as version 5: old rows keep NULL round statistics, new rows get them, the
    trend's lookup path (run, metric, case) is indexed in place of the index on run alone, and the index on
    case_id alone is gone."""
    engine = sa.create_engine(url)
    md = v1_tables()
    md.create_all(engine)
    with engine.begin() as conn:
        conn.execute(md.tables["store_meta"].insert().values(key="store_version", value="1"))
        run_pk = conn.execute(
            md.tables["runs"].insert().values(
                run_id="old", runner="cpu-test", commit="c0", branch="main", dirty=False,
                started_at="2026-01-01T00:00:00Z", finished_at="2026-01-01T00:01:00Z", fingerprint="{}",
            )
        ).inserted_primary_key[0]  # fmt: skip
        conn.execute(
            md.tables["measurements"].insert().values(
                run=run_pk, case_id="t.alpha[n=8]@cpu", metric="latency.median", unit="s", direction="lower",
                value=0.001, low=0.0009, high=0.0011,
            )
        )  # fmt: skip
    store = HistoryStore(url)
    (old,) = store.series("cpu-test", "t.alpha[n=8]@cpu", "latency.median")
    assert (old.run_id, old.value, old.rounds, old.log_sd) == ("old", 0.001, None, None)
    fresh = make_run([make_case("alpha", 1e-3)], run_id="new")
    assert store.ingest(replace(fresh, started_at="2026-02-01T00:00:00Z"), "cpu-test")
    new = store.series("cpu-test", "t.alpha[n=8]@cpu", "latency.median")[-1]
    assert new.run_id == "new" and new.rounds == 5 and new.log_sd is not None
    with engine.connect() as conn:
        version = conn.execute(sa.text("SELECT value FROM store_meta WHERE key = 'store_version'")).scalar()
    assert version == "5"
    indexes = {ix["name"] for ix in sa.inspect(engine).get_indexes("measurements")}
    # version 4: the trend's covering index, in place of the older ones on (run, metric, case_id) and on run alone;
    # version 5: no index on case_id alone (a version-1 store had one)
    assert indexes == {"ix_measurements_trend"}
    assert "ix_runs_runner_started" in {ix["name"] for ix in sa.inspect(engine).get_indexes("runs")}
    HistoryStore(url)  # opening an upgraded store again changes nothing


def check_prune(store: HistoryStore) -> None:
    """Keep the latest runs of a runner; measurements go with their runs; a dry run deletes nothing."""
    assert store.prune(5, dry_run=True) == {"cpu-test": 11}
    assert len(store.series("cpu-test", "t.beta[n=8]@cpu", "latency.median")) == 16
    assert store.prune(5) == {"cpu-test": 11}
    kept = store.series("cpu-test", "t.beta[n=8]@cpu", "latency.median")
    assert [p.run_id for p in kept] == [f"run-{i:02d}" for i in range(11, 16)]
    with store.engine.connect() as conn:
        orphans = conn.execute(
            sa.text("SELECT COUNT(*) FROM measurements WHERE run NOT IN (SELECT id FROM runs)")
        ).scalar()
    assert orphans == 0
    assert store.prune(5) == {"cpu-test": 0}


def check_export(url: str, tmp_path: Path) -> None:
    """`history list` and `history export`: two runner classes, runs on two branches; a Parquet export read back
    by pandas has exactly one row per run, case and metric, with the stored values."""
    import pandas as pd

    store = HistoryStore(url)
    main = history_runs(6, step_at=99)
    store.ingest_many((r, "cpu-a") for r in main)
    store.ingest_many((r, "cpu-b") for r in main[:4])
    side = replace(main[5], run_id="side", git=replace(main[5].git, branch="feature") if main[5].git else None)
    store.ingest(side, "cpu-a")
    listed = store.list_runs()
    assert len(listed) == 11 and listed[0].started_at >= listed[-1].started_at  # newest first
    assert [r.run_id for r in store.list_runs(RunFilter(runner="cpu-a", branch="feature"))] == ["side"]
    assert len(store.list_runs(RunFilter(runner="cpu-b", since="2026-11-02", until="2026-11-03"))) == 2
    per_run = sum(len(c.metrics) for c in main[0].cases)
    assert all(r.measurements == per_run for r in listed)

    out = tmp_path / "export.parquet"
    rows = export_measurements(Settings(), url, RunFilter(), ExportFormat.parquet, out)
    frame = pd.read_parquet(out)
    assert rows == len(frame) == 11 * per_run
    assert not frame.duplicated(["runner", "run_id", "case_id", "metric"]).any()
    assert set(frame["runner"]) == {"cpu-a", "cpu-b"}
    one = frame[(frame.runner == "cpu-a") & (frame.run_id == "run-02") & (frame.case_id == "t.alpha[n=8]@cpu")]
    stored = main[2].cases[0].metric("latency.median")
    assert stored is not None
    assert one[one.metric == "latency.median"]["value"].item() == pytest.approx(stored.value, rel=1e-12)
    csv = tmp_path / "export.csv"
    assert export_measurements(Settings(), url, RunFilter(runner="cpu-b"), ExportFormat.csv, csv) == 4 * per_run
    assert len(pd.read_csv(csv)) == 4 * per_run


def check_rolling_baseline(url: str, tmp_path: Path) -> None:
    """`compare CANDIDATE --baseline store:main`: against 16 null runs of main, a candidate 20% slower in one case
    is a regression there and not in the other; a candidate like the history is nowhere a regression."""
    store = HistoryStore(url)
    store.ingest_many((r, "cpu-test") for r in history_runs(16, step_at=99))
    other = replace(history_runs(1, factor=1.0)[0], run_id="feature-run")
    store.ingest(replace(other, git=replace(other.git, branch="feature") if other.git else None), "cpu-test")

    def verdicts(scale: float, name: str) -> dict[str, str]:
        cand = make_run([make_case("alpha", 1e-3, seed=500, scale=scale), make_case("beta", 2e-3, seed=500)], name)
        path = tmp_path / f"{name}.json"
        dump_results(cand, path)
        req = CompareRequest(baseline=path, runner="cpu-test", db=url, store_baseline="store:main:12")
        outcome = compare_files(Settings(), req)
        assert outcome.baseline.run_id == "store:main:12"
        assert "last 12 run(s) of cpu-test (c004..c015)" in outcome.comparison.baseline_label
        assert any("cross-job noise from the history store" in w for w in outcome.comparison.warnings)
        return {r.case_id: r.verdict.value for r in outcome.comparison.rows if r.metric == "latency.median"}

    # beta's interval (-1.2% .. +3.5%) reaches past the 3% threshold: not equivalence, so inconclusive
    assert verdicts(1.2, "step") == {"t.alpha[n=8]@cpu": "regression", "t.beta[n=8]@cpu": "inconclusive"}
    assert verdicts(1.0, "null") == {"t.alpha[n=8]@cpu": "unchanged", "t.beta[n=8]@cpu": "inconclusive"}


def check_change_point_cache(url: str, refuse_writes: str | None = None) -> None:
    """`trends` caches each series' change points in the store: a second trend computes none, a run that adds to
    one series recomputes that series only, other settings and a damaged entry are computed afresh, prune clears
    the runner's entries, and every cached answer equals the uncached one. `refuse_writes`: SQL that makes the
    cache table refuse inserts; then the trend still answers (computing every time)."""
    from perfci.stats.changepoint import detect_change_points

    store = HistoryStore(url)
    for run in history_runs():
        assert store.ingest(run, "cpu-test")
    calls: list[int] = []

    def counting(values: list[float], **kwargs: Any) -> Any:
        calls.append(len(values))
        return detect_change_points(values, **kwargs)

    first = trends(store, detect=counting)
    assert sorted(calls) == [16, 16]
    assert first == trends(store, cache=False)
    assert [len(t.shifts) for t in first] == [1, 0]  # alpha steps up at run 10, beta stays put
    calls.clear()
    assert trends(HistoryStore(url), detect=counting) == first and calls == []  # read back, none computed

    later = "2026-12-01T00:00:00.000000Z"
    beta_only = replace(make_run([make_case("beta", 2e-3, seed=99)], run_id="run-16"), started_at=later)
    assert store.ingest(beta_only, "cpu-test")
    second = trends(store, detect=counting)
    assert calls == [17]  # beta's series grew; alpha's is as it was
    assert second == trends(store, cache=False)

    calls.clear()
    assert trends(store, detect=counting, min_effect=0.05) == trends(store, min_effect=0.05, cache=False)
    assert sorted(calls) == [16, 17]  # other settings: other entries

    engine = sa.create_engine(url)
    cp = tables.change_points.c
    with engine.begin() as conn:
        damaged = conn.execute(sa.update(tables.change_points).where(cp.case_id.like("%alpha%")).values(result="[[99"))
        assert damaged.rowcount == 2  # one entry per settings
    calls.clear()
    assert trends(store, detect=counting) == second and calls == [16]

    def never(values: list[float], **kwargs: Any) -> Any:
        return []

    assert [len(t.shifts) for t in trends(store, detect=never)] == [0, 0]  # another detector: not the cached answers

    store.prune(keep=5)
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(tables.change_points)).scalar() == 0
    if refuse_writes is not None:
        with engine.begin() as conn:
            conn.execute(sa.text(refuse_writes))
        calls.clear()
        assert trends(store, detect=counting) == trends(store, cache=False)
        assert sorted(calls) == [4, 5]  # the latest 5 runs: alpha is in 4 of them (run-16 has beta only)
        calls.clear()
        trends(store, detect=counting)
        assert sorted(calls) == [4, 5]  # nothing could be cached: computed again, and no error
    engine.dispose()
