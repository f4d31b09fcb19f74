"""The trend report's rows and chart data (reports/trend_html.py), from trends over a real SQLite store."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from perfci.compare.history_noise import estimate_noise
from perfci.reports import trend_html
from perfci.reports.trend_html import render_trend, trend_data, trend_rows
from perfci.store.history import HistoryStore
from perfci.store.trend import environment_changes, trends
from tests.formats import with_spec
from tests.store_cases import history_runs


def store(tmp_path: Path, n: int = 16) -> HistoryStore:
    s = HistoryStore(f"sqlite:///{tmp_path / 'h.db'}")
    s.ingest_many((r, "cpu-test") for r in history_runs(n))
    return s


def test_rows_put_the_slowdown_first_with_its_commit_and_size(tmp_path: Path) -> None:
    s = store(tmp_path)
    items = trends(s)
    noise = {(e.runner, e.case_id): e for e in estimate_noise(s, "cpu-test").values()}
    rows = trend_rows(items, noise)
    assert [(r["case"], r["status"]) for r in rows] == [("t.alpha[n=8]@cpu", "worse"), ("t.beta[n=8]@cpu", "steady")]
    alpha, beta = rows
    assert alpha["last_commit"] == "c010" and 1.2 < alpha["last_change_v"] < 1.3
    assert alpha["noise"] == "-"  # 6 runs since its change: too few for a learned figure
    assert beta["noise_v"] is not None and beta["shifts"] == 0 and beta["overall"] == "-"


def test_a_higher_is_better_metric_calls_a_rise_better(tmp_path: Path) -> None:
    items = trends(store(tmp_path), metric="throughput")
    alpha = next(r for r in trend_rows(items, {}) if r["case"] == "t.alpha[n=8]@cpu")
    assert alpha["status"] == "worse"  # throughput fell by a fifth: worse for a higher-is-better metric


def test_chart_data_regimes_and_shifts(tmp_path: Path) -> None:
    data = trend_data(trends(store(tmp_path)), "latency.median")
    runs = data["runners"]["cpu-test"]["runs"]
    assert [r[1] for r in runs] == [f"c{i:03d}" for i in range(16)]  # once per runner, in time order
    alpha = next(c for c in data["cases"] if c["id"] == "t.alpha[n=8]@cpu")
    assert alpha["unit"] == "ms" and alpha["x"] == list(range(16))
    assert [(a, b) for a, b, _ in alpha["regimes"]] == [(0, 9), (10, 15)]
    first, second = (m for _, _, m in alpha["regimes"])
    assert 1.2 < second / first < 1.3
    assert alpha["shifts"][0][0] == 10 and alpha["shifts"][0][2] == "c010"


def test_long_series_are_cut_to_the_latest_runs(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(trend_html, "MAX_POINTS", 4)
    data = trend_data(trends(store(tmp_path)), "latency.median")
    alpha = next(c for c in data["cases"] if c["id"] == "t.alpha[n=8]@cpu")
    assert alpha["x"] == [12, 13, 14, 15] and len(alpha["y"]) == 4
    assert [(a, b) for a, b, _ in alpha["regimes"]] == [(12, 15)]  # the first regime ended before the cut
    assert alpha["shifts"] == []


def test_page_escapes_names_and_embeds_no_markup_from_data(tmp_path: Path) -> None:
    hostile = "t.x<script>alert(1)</script>"
    runs = [replace(r, cases=tuple(with_spec(c, replace(c.spec, workload=hostile)) for c in r.cases[:1]))
            for r in history_runs(4)]  # fmt: skip
    s = HistoryStore(f"sqlite:///{tmp_path / 'h.db'}")
    s.ingest_many((r, "cpu-test") for r in runs)
    page = render_trend(trends(s), {}, "latency.median", s.label)
    assert "<script>alert(1)" not in page
    assert "t.x&lt;script&gt;alert(1)&lt;/script&gt;" in page  # the table cell, as text


def test_environment_changes_are_named_where_they_happen(tmp_path: Path) -> None:
    """torch is upgraded at run 10, where alpha's change point starts: the row and the chart data say so."""
    s = HistoryStore(f"sqlite:///{tmp_path / 'h.db'}")
    runs = []
    for i, run in enumerate(history_runs()):
        libraries = {"torch": "2.5.0" if i >= 10 else "2.4.0", "numpy": "2.0.0"}
        runs.append(replace(run, fingerprint={**run.fingerprint, "libraries": libraries}))
    s.ingest_many((r, "cpu-test") for r in runs)
    fingerprints = {"cpu-test": s.run_fingerprints("cpu-test")}
    assert [fp["libraries"]["torch"] for _, _, fp in fingerprints["cpu-test"]][9:11] == ["2.4.0", "2.5.0"]
    env = environment_changes(fingerprints)
    assert env == {("cpu-test", "run-10"): "torch 2.4.0 -> 2.5.0"}
    items = trends(s)
    alpha = next(r for r in trend_rows(items, {}, env) if r["case"] == "t.alpha[n=8]@cpu")
    assert alpha["last_env"] == "torch 2.4.0 -> 2.5.0"
    assert trend_data(items, "latency.median", env)["runners"]["cpu-test"]["env"] == [[10, "torch 2.4.0 -> 2.5.0"]]
    page = render_trend(items, {}, "latency.median", s.label, fingerprints)
    assert "torch 2.4.0 -&gt; 2.5.0" in page  # the table cell, escaped


def test_trend_check_names_the_upgrade_at_the_change_point(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from perfci.cli import app

    url = f"sqlite:///{tmp_path / 'h.db'}"
    runs = [
        replace(r, fingerprint={**r.fingerprint, "libraries": {"torch": "2.5.0" if i >= 10 else "2.4.0"}})
        for i, r in enumerate(history_runs())
    ]
    HistoryStore(url).ingest_many((r, "cpu-test") for r in runs)
    res = CliRunner().invoke(app, ["trend", "--db", url, "--check", "6"])
    assert res.exit_code == 1
    assert "commit c010, 2026-11-11; environment changed there: torch 2.4.0 -> 2.5.0)" in res.stderr


def test_markdown_summary_lists_what_got_worse_as_inert_text(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from perfci.cli import app

    url = f"sqlite:///{tmp_path / 'h.db'}"
    runs = []
    for i, r in enumerate(history_runs()):
        fingerprint = {**r.fingerprint, "libraries": {"torch": "2.5.0" if i >= 10 else "2.4.0"}}
        hostile = with_spec(r.cases[0], replace(r.cases[0].spec, workload="t.x|<b>@here</b>"))
        runs.append(replace(r, fingerprint=fingerprint, cases=(*r.cases, hostile)))
    HistoryStore(url).ingest_many((r, "cpu-test") for r in runs)
    res = CliRunner().invoke(app, ["trend", "--db", url, "--markdown", "-", "--html", str(tmp_path / "t.html")])
    assert res.exit_code == 0, res.output
    text = res.stdout[res.stdout.index("### perfci trend") :]
    assert text.startswith("### perfci trend: 2 worse, 0 better since their last change point, 1 steady (3 case(s))")
    row = next(line for line in text.splitlines() if "t.alpha" in line)
    assert "+25.0%" in row and "`run-10`" in row and "`c010`" in row and "`torch 2.4.0 -> 2.5.0`" in row
    assert "`t.x\\|<b>@here</b>[n=8]@cpu`" in text  # a code span, its pipe escaped: inert in a table
    assert "t.html" in text.strip().splitlines()[-1]
    path = tmp_path / "summary.md"
    assert CliRunner().invoke(app, ["trend", "--db", url, "--markdown", str(path)]).exit_code == 0
    assert path.read_text().startswith("### perfci trend: 2 worse")
