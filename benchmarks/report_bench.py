"""Report figures for docs/reports.md: HTML size and browser render time, Markdown length.

    python -m benchmarks.report_bench [RESULTS.json ...]

Synthetic comparisons (tests/report_fixtures.py: 500 cases with GPU telemetry and peaks, 3 metrics per case)
plus any results files given (e.g. a real default-suite run), and a trend report over a synthetic history store
(500 cases x 100 runs, a 10% step in every tenth case at run 60). Render times need Chromium and playwright.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from perfci.compare.history_noise import estimate_noise
from perfci.format.model import RunResult
from perfci.format.schema import load_results
from perfci.reports.html import render_html
from perfci.reports.markdown import render_markdown
from perfci.reports.trend_html import render_trend
from perfci.store.history import HistoryStore
from perfci.store.trend import trends
from tests.conftest import make_case, make_run
from tests.integration.test_report_browser import CHROMIUM_ARGS
from tests.report_fixtures import suite_comparison
from tests.unit.test_report_markdown import synthetic


def browser_times(paths: list[Path], repeats: int = 3) -> dict[Path, list[tuple[float, float]]]:
    from playwright.sync_api import sync_playwright

    out: dict[Path, list[tuple[float, float]]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        for path in paths:
            for _ in range(repeats):
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                start = time.perf_counter()
                page.goto(path.as_uri())
                page.wait_for_selector("body[data-ready='1']", timeout=60_000)
                ready = time.perf_counter() - start
                page.evaluate("window.perfciDrawAll()")
                out.setdefault(path, []).append((ready, time.perf_counter() - start))
                page.close()
        browser.close()
    return out


def history(cases: int, runs: int) -> list[RunResult]:
    out = []
    for i in range(runs):
        made = [
            make_case(f"c{k:03d}", 1e-3 * (1 + k % 7), seed=i, scale=1.1 if k % 10 == 0 and i >= 60 else 1.0)
            for k in range(cases)
        ]
        stamp = f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}T00:00:00.000000Z"
        out.append(replace(make_run(made, run_id=f"r{i:03d}"), started_at=stamp, finished_at=stamp))
    return out


def trend_page(folder: Path, cases: int = 500, runs: int = 100) -> tuple[str, Path]:
    start = time.perf_counter()
    store = HistoryStore(f"sqlite:///{folder / 'trend.db'}")
    store.ingest_many((r, "bench") for r in history(cases, runs))
    built = time.perf_counter() - start
    start = time.perf_counter()
    items = trends(store)
    noise = {(e.runner, e.case_id): e for e in estimate_noise(store, "bench", items=items).values()}
    html = render_trend(items, noise, "latency.median", store.label)
    took = time.perf_counter() - start
    path = folder / "trend.html"
    path.write_text(html, "utf-8")
    flagged = sum(1 for t in items if t.shifts)
    label = (
        f"trend report, {cases} cases x {runs} runs ({flagged} with change points; store built in {built:.1f} s), "
        f"trends + noise + page in {took:.2f} s"
    )
    return label, path


def main(argv: list[str]) -> None:
    folder = Path(tempfile.mkdtemp(prefix="perfci-report-bench-"))
    pages: dict[str, Path] = {}
    for n in (500, 1000):
        base, cand, comp = suite_comparison(n, telemetry=True)
        start = time.perf_counter()
        html = render_html(cand, comp, base)
        took = time.perf_counter() - start
        pages[f"{n}-case comparison ({len(comp.rows)} rows), rendered in {took:.2f} s"] = folder / f"cmp{n}.html"
        (folder / f"cmp{n}.html").write_text(html, "utf-8")
    for arg in argv:
        run = load_results(Path(arg))
        path = folder / f"run-{len(pages)}.html"
        path.write_text(render_html(run, None), "utf-8")
        pages[f"{arg} ({len(run.cases)} cases)"] = path
    label, path = trend_page(folder)
    pages[label] = path
    for label, path in pages.items():
        print(f"{label}: {path.stat().st_size:,} bytes")
    for n in (500, 5000, 50_000):
        md = render_markdown(None, synthetic(n))
        print(f"Markdown summary, {n:,}-case comparison: {len(md):,} characters")
    if shutil.which("chromium"):
        for path, times in browser_times(list(pages.values())).items():
            label = next(k for k, v in pages.items() if v == path)
            ready = ", ".join(f"{r:.2f}" for r, _ in times)
            drawn = ", ".join(f"{a:.2f}" for _, a in times)
            print(f"{label}: ready {ready} s; all charts drawn {drawn} s")


if __name__ == "__main__":
    main(sys.argv[1:])
